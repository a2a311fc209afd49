# config class error class return
# value log log FIXME import
# def FIXME class import import import FIXME
# FIXME value config import FIXME value value return
# value value class value error value TODO
# error def def class return config
# log FIXME return def value config class
# value config TODO
# import TODO value TODO error error return
# log value def def class error log config
# TODO TODO error log
# def log def TODO class value return
# TODO value
# def log return
# def value config import import def error
# class FIXME import return FIXME
# import return import def value import log
# log return config return
# log error TODO return FIXME FIXME error error
# def def TODO class value config import error
# log FIXME
# config error import TODO import FIXME log def
# log config class FIXME error
# FIXME import FIXME return value error error error
# FIXME error return class def error
# log class class
# def error log value TODO import class error
