# TODO config FIXME class
# import config FIXME
# def config FIXME
# def TODO class log
# error config class config
# value config TODO
# log log import log return def value
# class error import log FIXME TODO import import
# error FIXME value def error return class log
# FIXME TODO return log value class class
# config TODO log value config FIXME
# TODO FIXME FIXME import TODO value config
# error return TODO def def def
# def log value log def FIXME
# config value import
# log FIXME FIXME log TODO
# error error
# log log def
# class def FIXME TODO class
# log return import value def class config
# def return config def TODO import def log
# return log log return log value
# log config TODO def return class
# config log FIXME log config import
# class value TODO class import value import
# class FIXME log config config
