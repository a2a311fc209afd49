# log FIXME def def import def import
# FIXME class TODO config
# FIXME return class return log config config
# return value
# config log value def return class
# TODO TODO config return FIXME log error
# class config import class
# def def error import def
# log error def FIXME TODO def log
# import value FIXME
# value config FIXME return import TODO config class
# class config return def log
# def TODO def error error config error
# class config error
# FIXME FIXME return log import FIXME FIXME
# log FIXME TODO
# log return FIXME value
# TODO error def
# import TODO return config
# log class error class FIXME TODO
# config import
# log TODO def
# import import
# TODO value config class log return class log
# class def import import
# error config config def
# error class TODO log config error value log
# log error return FIXME config
# value return import FIXME TODO return value config
# value import FIXME
# value log import
# TODO config import
# import config value value
# class log return log log import config class
# def class value value return TODO FIXME
# config return log
# config class config
# value log def value import
# TODO def TODO error FIXME
# TODO value log def import def value def
# import value def TODO TODO TODO TODO FIXME
# def FIXME config value
# class class FIXME FIXME
# def class FIXME import return
# log log config return TODO value
# def import def log error TODO value
# def error def log import error
# config value def config error value
# return value FIXME config def
# import error log return import config def config
