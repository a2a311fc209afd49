# value import FIXME TODO
# TODO class config import def
# log config return TODO import class value
# config error
# TODO return config import return config
# class TODO TODO config
# config error log def import class
# TODO error FIXME log
# error import config FIXME
# log class import import
# error config def error
# import value value
# log config value config value return
# config def TODO import
# value log TODO config TODO class class
# error config FIXME error class
# log error import def return
# def def import FIXME
# value def value config import def def
# log def class
# config class class log
# value class def
# return import error def value def
# import log log def
# value log class import value def FIXME
# log config config FIXME FIXME import class
# TODO class log error TODO error error
# return TODO def error return TODO
# TODO error class return FIXME config value class
# import FIXME def
# import def def error log config
# value config config
# def error import error
# value import class value return def def
# config return class log value FIXME return
# FIXME log FIXME value
