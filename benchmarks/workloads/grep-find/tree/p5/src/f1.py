# TODO error TODO
# FIXME import def class def TODO
# FIXME class TODO error
# return value TODO FIXME TODO value
# value TODO error
# value import def return def return
# import return value
# config import import error config
# log FIXME class return class
# log log error error def import FIXME def
# config class TODO
# value import def class return FIXME FIXME return
# class error config class class error
# TODO def error config return
# config class class value error TODO return
# import import
# config error log log TODO
# log TODO import
# import def error def error error config class
# class import class import def def value config
# return def error class def
# FIXME class TODO log log
# value class value class import import def
# error import error
# def return value
# FIXME value log
# return FIXME TODO class error def
# log config
# value def
# value error TODO return config import FIXME import
# FIXME log FIXME log import value config config
# import config
# return TODO
# def FIXME value log def
# value import TODO def
# import value config log TODO config
# log log return value def class
# import log def def import log value class
# value import
# def FIXME import
# FIXME log log log import
# value class def config return def config import
# def error class
# error class return
