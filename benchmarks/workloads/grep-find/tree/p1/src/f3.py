# log import class config TODO class
# config FIXME
# class def error return config return FIXME
# config def log class TODO
# def class def def def TODO value
# config return return config value config def value
# config TODO FIXME return config import class import
# TODO FIXME log log def config error
# return config def error error
# log config return FIXME value value return class
# FIXME log return return
# error def FIXME error value
# TODO class error TODO FIXME TODO
# log log FIXME return
# import value class value log TODO class
# FIXME FIXME
# class FIXME value
# return FIXME value return return log TODO config
# error return value
# def class log error TODO value import
# def TODO log FIXME class value return
# import config FIXME class error FIXME value
# import class TODO TODO config def import class
# def def import import FIXME log
# value config error TODO error log FIXME
# value import TODO def class
# value error FIXME
# import return class log def return TODO
# error TODO value
# TODO import config class class TODO class
# return log return config
# class return log log log config config
# class return return log class log
# TODO error error return FIXME error value error
# import class log
# TODO config config import TODO log TODO
# TODO import import def return
# return config TODO
# return class return return FIXME class value config
# FIXME class
# class FIXME
# log value class value return log error
# import config TODO return value def
# def class log error return class value return
