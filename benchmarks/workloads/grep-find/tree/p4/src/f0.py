# config import error
# error return log return TODO error TODO config
# def def class return return import TODO
# log value TODO log FIXME def return TODO
# log log error def log TODO return
# log value log import def error config value
# log class config value FIXME
# def FIXME FIXME log FIXME
# class config def log
# FIXME value import return
# log log FIXME class return
# error FIXME log return value config config
# TODO TODO TODO
# TODO def config return FIXME class TODO
# log value error
# def return value log import return
# import FIXME import import value class log
# value class config TODO
# value import class import
# import FIXME config config FIXME import def import
# return config log value config return
# error class config log TODO
# import config class FIXME FIXME FIXME
# return import import
# error value FIXME
# class def import TODO TODO log return
# def FIXME log def def TODO
# value def log log
# def value class config config
# class FIXME value
# import TODO TODO TODO import log return
# import TODO TODO FIXME TODO def log
# value import config class log log class
# return log return import
# FIXME class def def return value value
# error class return value def TODO value
