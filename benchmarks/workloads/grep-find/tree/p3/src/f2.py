# import value log TODO config value value FIXME
# log error log import TODO def def import
# value error TODO
# return TODO return def def config error
# def import import error log
# config TODO
# TODO value class TODO class
# return def
# FIXME return def TODO class return
# error value TODO FIXME def import class value
# return error error FIXME FIXME return
# value class log class import value class
# error FIXME FIXME class TODO
# class log return log
# value log def log import class value value
# error FIXME def TODO return
# config config def TODO
# def import log
# error error
# def TODO return return
# error FIXME log TODO error
# config import import error config
# FIXME class return
# return error value return FIXME import
# FIXME log error TODO def value
# FIXME TODO config
# FIXME value FIXME import
# value class import TODO import FIXME
# config FIXME
# FIXME FIXME TODO
# def value log
# log return error
# config config log error
# config return log value config FIXME return
# class import return log
# FIXME value log log TODO class
# value TODO return log class log return
# TODO config log
# FIXME import config class error
# import import import return return return config
# return TODO class FIXME import FIXME TODO def
# FIXME def class class config error
# error FIXME class class TODO def import log
# import def def class
# import TODO config
# value FIXME import config error return error
# config error log
# log def error def return class
# class class import value
# error log class error import TODO
# return error log value def TODO
# def TODO
# class def return def
# def class
