# value def log def config import
# def def
# value import log FIXME TODO log
# class class FIXME class return error
# def log import return def
# config class value TODO def
# config value def TODO TODO
# import value error error return TODO
# log return value import
# error FIXME
# value import error TODO
# FIXME import return class
# import def FIXME FIXME config
# return TODO error
# import config error
# error import import FIXME config
# config log
# config value config value class error TODO
# error import class error
# import class def value def value error
# class FIXME error
# error error FIXME log value
# error import TODO def
# import config
# FIXME return TODO FIXME import
# error TODO
# config error TODO value class def FIXME
# import import return return import
# class class log class import import def
# def config import FIXME config TODO
# return value class class TODO import class import
# value error def log log value TODO error
# def class error config import config
# config TODO
# log FIXME FIXME FIXME class error
# config FIXME FIXME TODO
# return log import return def
# def class value import import error
# TODO TODO
# return log
# class def log error class FIXME return import
# def FIXME
