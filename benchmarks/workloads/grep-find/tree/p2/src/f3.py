# def class def value FIXME
# return import import FIXME import
# def class value TODO
# def import return return
# return return FIXME FIXME value FIXME import
# value FIXME value log FIXME import import
# def def def import TODO error FIXME value
# class config config FIXME FIXME TODO
# value import return log error FIXME value
# class return import
# error value FIXME TODO error return value import
# log log class error FIXME return
# TODO FIXME TODO return def def import
# config value return value log
# def FIXME
# def import FIXME class TODO error FIXME def
# FIXME config return
# import import config FIXME error def def
# config TODO
# value config class return
# error config error config
# def FIXME return class config
# return TODO FIXME import error FIXME
# log return
# import return TODO class
# def def
# config TODO class
# class error value error
# return config def import log def
# FIXME def TODO error return config class
# import log def FIXME
# TODO return import def log
# TODO value class config
# return config config def return
# def FIXME return class FIXME def
# return error
# return log value return import log
# log log FIXME import
# error import log log config
# TODO def value FIXME FIXME
# error config return class return FIXME config def
# error import error
# error FIXME config log value value value class
# import def
# TODO log TODO def
# def config error
# TODO return FIXME
# FIXME return FIXME class FIXME
# class class log config error
# def class
# error return
# import log return return log config class
