# error import import config value
# TODO FIXME
# FIXME TODO def log error log
# TODO log class TODO TODO log log
# FIXME return log class config error value TODO
# return FIXME
# error value return FIXME
# log value return value FIXME TODO
# import config class import
# TODO log
# import import def def import
# log config
# def FIXME return log TODO
# return value value
# return def error
# import FIXME return
# return FIXME TODO class
# value class
# error error
# return value return FIXME import class log
# TODO FIXME return
# value return value TODO
# def config error value return
# class TODO return return
# error return
# FIXME FIXME return return error
# class import log class
# TODO error return value def class error
# log FIXME config error value return def def
# class import import value return error
