# FIXME error import config
# return import class def FIXME config return value
# def log return import return value
# class value class def
# log log config
# class import import
# return class class
# FIXME return error return
# return value TODO
# FIXME value
# class TODO def
# TODO log log import
# FIXME def TODO FIXME TODO config
# FIXME class config config class import TODO
# FIXME value
# error value
# value log import config
# class log
# def return config
# error FIXME error TODO
# config def log FIXME TODO import value def
# FIXME error log
# class FIXME TODO error
# TODO FIXME
# class def class TODO
# class import def log error
# import return log FIXME TODO
# value class import import config
# return class log class
# value def class value FIXME class import
# value TODO class config log class error config
# FIXME config TODO TODO config
# class def value error class
# config FIXME class def config TODO error
# error error FIXME def FIXME log import TODO
# error TODO config TODO
# TODO FIXME class log import config error TODO
# TODO config TODO error
# FIXME FIXME TODO FIXME value FIXME class
# config FIXME FIXME error class error class return
# FIXME config TODO def value class log log
# value TODO log error TODO import
# class log config
# class return class import config return
