# import error log TODO
# FIXME value def error
# log FIXME TODO TODO value config import
# error def return import class import
# config error FIXME def
# class def
# value value return class FIXME config log class
# TODO config
# FIXME log error
# return error return config def return
# error FIXME
# def value error TODO
# FIXME return FIXME error
# value def import log FIXME def import
# import def error def
# error TODO
# TODO FIXME
# import TODO
# log TODO import value config error class
# FIXME TODO error log config TODO
# log import log FIXME return import value value
# return value TODO value FIXME
# return def FIXME error value FIXME
# class log def FIXME log FIXME
# def return config error
# log return import def TODO import
# error TODO def def
# FIXME import def
# FIXME def config def class TODO def FIXME
# import error TODO config TODO
# import log return value config
# import TODO TODO FIXME import log def
# error log
# def FIXME
# config def FIXME return
# error class def import
# def TODO
# FIXME value config
# FIXME config log config log log return
# error import return import FIXME FIXME
# error error
