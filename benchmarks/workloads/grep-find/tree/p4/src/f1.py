# return return return return config
# value TODO TODO def error return class error
# import FIXME log import def FIXME
# value class TODO FIXME value return return
# error log TODO log value error
# FIXME value class def return return value
# value return FIXME
# FIXME return TODO return class import import TODO
# value TODO return error log class
# class value def error def TODO error
# log error
# config config log log config error config FIXME
# log value
# TODO return log
# def import return class
# import return FIXME config
# class value
# def FIXME return log import log
# return def config
# config FIXME TODO
# TODO FIXME return FIXME return FIXME import
# value value error TODO return
# class config return config FIXME def TODO class
# error FIXME return def return FIXME
# log value class config log error return
# log config FIXME FIXME TODO error log class
# FIXME error return
# FIXME class
# return import config FIXME log
# import value import def log log config
# error value class class class error
# return class FIXME def value TODO value
# log return FIXME error
# TODO TODO
# import error log class FIXME
# FIXME error
