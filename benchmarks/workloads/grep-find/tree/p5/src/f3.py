# value error value FIXME config
# FIXME log
# log import class import TODO import class
# def def FIXME config value return
# value return log error TODO
# log import import value
# import TODO class return error TODO class
# config config config return log
# TODO import error log import TODO
# class error config def
# def FIXME error log value TODO log
# import import
# import return
# error TODO return config config
# return class class
# value class
# TODO TODO error FIXME config
# FIXME def log error import
# class log
# TODO return value
# def log value value log FIXME TODO
# config import config log error return FIXME
# def class TODO
# FIXME config def value
# import log
# return FIXME
# import import class def TODO
