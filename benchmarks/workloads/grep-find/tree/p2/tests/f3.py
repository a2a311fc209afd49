# FIXME return
# error class error
# def def log
# def import value FIXME value error
# value value class log def FIXME
# log TODO error FIXME class
# FIXME return config import
# class TODO FIXME return TODO config
# class TODO class return log return import def
# import def config value
# value error config import config return class
# import FIXME import class
# return error FIXME config class value
# log config
# import error class
# TODO config log
# def class
# log import class
# import TODO error return value import
# error return class import
# error import import class return FIXME
# log FIXME log
# import value FIXME error TODO
# error class FIXME
# def log TODO config error config return return
# class def return
# def error error
# config import error FIXME FIXME
# config FIXME import config class TODO value
# import TODO def class log import
# FIXME error config value
