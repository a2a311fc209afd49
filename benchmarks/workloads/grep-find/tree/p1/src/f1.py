# return FIXME FIXME config value
# import error
# import return error config class FIXME FIXME
# value def FIXME TODO value def def
# def def
# error class def return config value FIXME
# return log FIXME return return
# TODO TODO
# value log
# return log FIXME class log
# class import return config return import
# import FIXME TODO config config config def config
# def FIXME class log error import
# log def import log FIXME def def config
# import error return log config import return value
# def import def return
# FIXME TODO return FIXME log
# log return return return class
# def log value
# config import TODO log config return import
# import error value
# class value TODO
# FIXME error def
# FIXME TODO return FIXME error FIXME class
# value class config return FIXME import class error
# TODO TODO class def config def
# error class
# FIXME TODO import config
# return config return config class error class TODO
# FIXME return value import import TODO FIXME value
# FIXME def log
# config log
# error log def FIXME
# config config value error def log TODO log
# return value TODO import def
# FIXME value FIXME error
