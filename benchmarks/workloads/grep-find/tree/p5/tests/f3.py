# value class class log FIXME
# import return FIXME import config config def
# log log FIXME import FIXME log TODO value
# class value config value
# config import FIXME config TODO log def config
# error log log class return import
# return return TODO def log def config return
# return value def TODO
# import class
# log return log config
# class TODO class return return
# log TODO
# return import class def config error FIXME def
# value config error return
# error log config log TODO TODO
# class error
# class TODO value FIXME FIXME error TODO def
# import value value value import FIXME log value
# TODO def TODO config def return return class
# class TODO
# value FIXME error
# TODO import log value return config
# import FIXME value return FIXME value FIXME class
# log class TODO return
# TODO class error def TODO
# value def import
# class return import FIXME import def config
# class class config error def log
# return def import FIXME
# class def def error log TODO log error
# class FIXME TODO
