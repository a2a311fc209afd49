# FIXME TODO value
# FIXME error import log log return class value
# def import
# class return
# import config config
# FIXME import value config TODO log value
# config config def return
# class def FIXME
# value config class error TODO def TODO class
# TODO return import config import FIXME FIXME FIXME
# import config
# class def FIXME TODO config
# return class import return import log return
# def log value FIXME TODO class config
# TODO def config class
# return class return import log value TODO import
# import config value class import
# error error
# FIXME def def return config def
# import return import config value
# import import TODO value config TODO import import
# class error value
# error return def
# def def error class
# def return log import config error
# config value log value
# class import TODO config return error
# class TODO
# def TODO value FIXME class
