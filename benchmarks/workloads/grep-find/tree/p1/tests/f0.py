# class FIXME value error return TODO
# error class FIXME TODO config return class config
# config FIXME error def class
# FIXME FIXME log TODO FIXME FIXME error return
# def log TODO config config def value
# TODO log FIXME def class FIXME FIXME
# class import error import class value FIXME
# config FIXME value class def
# FIXME import import import def
# class config TODO class return
# FIXME return class error
# TODO FIXME log
# value error TODO import error FIXME
# config FIXME error def return config error
# class import FIXME return config error
# log def
# return error def def error config class log
# FIXME return value FIXME class
# class log error log def FIXME return
# return error value return log error value def
# TODO error def import def config TODO
# error config FIXME
# config return FIXME FIXME FIXME import
# log error config
# value class value def return value def def
