# value class FIXME
# log TODO
# return class
# return FIXME log TODO class def log error
# return FIXME
# import return class
# value error
# import FIXME
# value TODO
# FIXME value import def value error return error
# error import class log config import def
# import error
# log error
# log import
# class log FIXME TODO return
# return config error def import return class config
# error FIXME value class class import value
# log import config class FIXME return
# import class error
# value value class log config
# TODO import config
# config FIXME return error class class value TODO
# FIXME config config def
# import TODO error TODO TODO
# TODO class
# error log return error config return error config
# def return return return class TODO return
# config FIXME class TODO
# error class
# def FIXME
# log TODO FIXME
# def log return error log return value
# value return value import
# def value def config error error
# config return return FIXME config
# TODO return log
# config return
# log config class error class TODO error TODO
# FIXME TODO value FIXME log import
# error FIXME def error import return
# import FIXME error
# config config FIXME FIXME
# log import config error class
# value log config return
# class TODO return value import import TODO
# FIXME TODO log def def
# TODO error value error log
# class def
# value config class error
