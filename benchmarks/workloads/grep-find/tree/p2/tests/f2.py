# value return
# value FIXME def return error def TODO
# class TODO value TODO return
# error return error return FIXME config
# value error error value
# import FIXME
# config value class class FIXME import class return
# class log config class config error
# FIXME import TODO
# return error log class log
# def TODO
# TODO TODO import FIXME return log
# log error error
# class config
# config TODO class log
# log log return
# class value return TODO import TODO
# FIXME class
# FIXME value TODO log return import class
# class value log config error error value
# FIXME TODO import config def TODO import
# log config log TODO FIXME error log
# TODO def
# def value config return
# config class config FIXME def error
# TODO value log
# TODO error config config config return
# log class FIXME error class
# return TODO value import def
