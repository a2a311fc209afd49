# def TODO value FIXME class return import
# def log def
# log TODO FIXME class class TODO config
# value FIXME FIXME
# error TODO class value value value
# config def config error return log import value
# TODO TODO FIXME value log error value
# class value value import
# return class error config config
# error return import def import value
# class TODO log log value value log def
# return log return config FIXME FIXME log log
# def import class config FIXME import class def
# config value config import error import error
# error TODO class
# value FIXME class return config
# error def config error config
# config import return
# error return return return FIXME FIXME config
# TODO def config class return config class
# import return log FIXME TODO FIXME
# value FIXME
# TODO value error FIXME import
# log config log value
# value FIXME log def
# config def class error config class config def
# FIXME log import return import value class value
# return error error TODO return FIXME TODO
# import log import return
# log value
# config value
# TODO class class return import return class
# value FIXME log class import return error def
# def return error
# error log def log error class TODO
# error def class class def value
# TODO TODO class def error import error
# log import TODO
# class log config return FIXME error import
# import import
# import class def TODO
# def log def FIXME value log TODO log
# value value error
# TODO error TODO return class
# import class log error FIXME
# def log
# TODO TODO TODO log config def config return
# value FIXME class TODO TODO FIXME value def
# class log return TODO import
# import def error
# return FIXME import
# TODO value class config
# import TODO import def
# TODO config FIXME log error FIXME log TODO
# TODO TODO
# config log value def
# config log error FIXME return
