# class import import return
# import TODO config error return
# return FIXME
# FIXME return FIXME config import import def return
# TODO def
# def def log
# FIXME FIXME TODO value class TODO TODO def
# class return config import TODO
# return import error return value
# log def TODO config import TODO import
# class def def return FIXME
# return log config import
# import log FIXME error value FIXME FIXME TODO
# return log TODO config class import log
# return return import log TODO def
# return return value
# log return TODO class return class def
# log log log config return config
# TODO TODO def log class log config
# error def FIXME log config error import TODO
# error class
# class TODO value TODO config log
# FIXME class return config error error
# return def log import config class TODO
# import return TODO class TODO value
# TODO def FIXME TODO def log return import
# return TODO value config TODO def
# value config class value config
# import value log log import return
# TODO FIXME error class FIXME value
# log class value return log log
# log import TODO return value config config error
# class config config config config log return return
# return class def def
# config config error import class import config log
# class def import def value config class
# import FIXME
# value error error FIXME return class config error
# error FIXME import log FIXME
# config import
# return error TODO
# TODO return return config
# def log config config return FIXME value
# return FIXME value import
