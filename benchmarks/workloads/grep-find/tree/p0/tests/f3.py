# class return
# TODO return FIXME return
# def error config TODO
# error error
# TODO import class def def config TODO
# class error return FIXME FIXME class import value
# value value import def TODO error value
# def def import FIXME TODO error config
# class FIXME error
# TODO TODO def value value error import config
# TODO config def TODO error
# def return value def def log return error
# value error return config error error
# return class import import
# log value
# import config FIXME error return
# config TODO return return
# config config TODO def TODO def log log
# TODO value import config import class
# return value
# log class return FIXME return def
# error value class return config config log class
# class FIXME config def config
# def config FIXME FIXME
# log return def error TODO FIXME TODO error
