# FIXME value FIXME log class import config error
# def error error def
# log import FIXME
# error FIXME class return FIXME
# error log class error config log
# def error class error value
# error log error class def
# return value
# def error config return log return class value
# value config
# TODO TODO
# def return import FIXME import
# log config log error def def
# class class class
# value log TODO
# FIXME TODO def log value return
# def TODO error class import
# class TODO error
# import class FIXME def
# value return FIXME return
# error return FIXME config def TODO error value
# class return return
# log class FIXME FIXME log error
# import FIXME class class log FIXME error def
# config FIXME error log import class
# error log TODO config
# error log
# class value
# config return class return
# config log
# TODO FIXME FIXME FIXME class
# value error return log value
# error import value class log
# log log config
# config class
# return class log FIXME
# log FIXME class TODO class
# TODO import value TODO TODO return value
# return import
# FIXME config return return error log log return
# import return return error return FIXME class error
# class error FIXME value value class FIXME
# config log config def return TODO FIXME
# def log value import
# error value import config
# config class TODO return import value
# def import
# FIXME return error config config log
# class return return error FIXME TODO config FIXME
# config FIXME FIXME
# def TODO error
