# log import FIXME error error value
# log FIXME
# class import return
# log log log error
# log import log TODO value
# TODO log TODO config
# config class log value config import TODO class
# TODO error import log class FIXME def config
# log def
# class TODO error log value
# log value value import log
# import value return class def return
# TODO log log config log
# FIXME import
# TODO value
# return def config def import
# value class FIXME def TODO FIXME
# error error def import config config import TODO
# def return
# return log value error value class
# return import
# import FIXME log return FIXME error import config
# def error config import FIXME log
# TODO log FIXME return class import
# TODO return error class class config value log
# import return
# error FIXME log
# config value class return TODO return FIXME log
# return error log log return
# log TODO config import
# log return class
# log class value return log
# value return import return import FIXME import error
# TODO import
# value import log
# import def error error
# TODO value class error class import error def
# TODO value log FIXME config log value class
# import TODO return class
# TODO TODO def config
# import value
# FIXME config error return FIXME def config
# return log FIXME def
# config config
# return FIXME error FIXME TODO
# config config FIXME import log
# import return class
# import return class
