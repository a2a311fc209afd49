# FIXME log TODO log
# config error class import def config import value
# import value return class
# error error
# log log TODO
# TODO import class value error def error
# log def error TODO
# def FIXME FIXME value
# FIXME log class error
# return log
# TODO import
# error error config config TODO
# value TODO class value class value
# class def import class FIXME
# def TODO class log def log return FIXME
# config log
# TODO return def class
# return config log def error class log
# config TODO
# value import config
# class class FIXME error
# return import log FIXME def return
# value TODO return
# log import value TODO log config value return
# return FIXME value error
# log class import
# class import def value class
# value value return FIXME config
# config import value def config TODO config
# error import error FIXME config class TODO
# class import import FIXME return
# TODO def
# class TODO FIXME import return import value error
# error def return class
# TODO import import
# error class value class return FIXME class
# error config error return
# value import return value FIXME
# value log TODO import config log
# config config FIXME return
# FIXME def log def
# config class
# return FIXME log class
# return error log config
# log error FIXME import
# return return value class config TODO def config
# class class
# def value value def return class
# value class log FIXME
# config FIXME
# value error def
# log import log error class config log config
# log config log value value FIXME FIXME log
# def log error import import def
