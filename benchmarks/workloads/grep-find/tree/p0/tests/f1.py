# FIXME FIXME import
# def error def def
# config error
# return config TODO class value
# log config log def
# error return TODO def log TODO def
# TODO value def class FIXME
# value def FIXME return FIXME def config
# def config FIXME import
# config import log return TODO TODO TODO
# error error FIXME error error
# error log
# value return log value value
# class def
# FIXME import TODO FIXME value
# log def class import config class
# TODO import log def log import def
# TODO TODO
# value return import value
# TODO class FIXME error error
# value config log config import class
# config FIXME log def
# config TODO
# FIXME def value value
# config TODO class class error config FIXME TODO
# class value import
# value FIXME TODO return log class value
# error config def TODO value import
# return value return
# config log error import def error TODO
# FIXME FIXME
