# return TODO import return return
# def error FIXME value log TODO
# def FIXME error
# error config import TODO error import
# value import config
# return return
# class config
# config config TODO error def
# log log
# log log log log return
# config error
# def FIXME return
# error FIXME
# class return
# import import value import TODO
# value value class
# def value return return class value config class
# import TODO config error return
# TODO def return value value error config
# return return FIXME log TODO import return
# error class FIXME def log value FIXME class
# TODO class import error class value def
# import error config FIXME def config class
# import import log FIXME
# config TODO log config FIXME log error value
# value value error
# import return config TODO def
# error def error config return def log FIXME
# def FIXME
