# config FIXME class class def def FIXME
# value TODO value def value error
# import def config import def import error
# TODO import TODO import value config
# log return return def
# class def import return def import
# def value log TODO
# TODO def log return FIXME import
# log return def log
# return error TODO TODO FIXME config
# error config log config
# FIXME config return
# config log config class class error error class
# TODO return error log
# class TODO import config import import return
# def class error log TODO FIXME
# log class config value class return error
# FIXME log FIXME import class
# error def import return TODO value return
# def FIXME log TODO import
# def config
# config value FIXME return def
# config TODO error return FIXME TODO
# import def value return TODO
# error class TODO FIXME config class
# value return return log
# TODO TODO FIXME value error return return
# import def return value
# value import def error error
# config value
# error def
# log class log
# def error TODO import return
# def config
# error def def
