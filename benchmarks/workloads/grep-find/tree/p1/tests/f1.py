# def value log
# config error value value config return def log
# return return error error TODO FIXME import
# TODO return error import value
# log return import FIXME class
# def config value log TODO import
# error return class class class FIXME
# class config error def
# FIXME FIXME
# log return config error log TODO config config
# import return def TODO TODO def FIXME
# import class
# TODO FIXME log config config log value
# config value FIXME import
# log def FIXME TODO return class TODO
# def def log log class error
# class import TODO return config TODO log
# log class return def value config config return
# value class log log class log
# TODO FIXME log value class config TODO TODO
# FIXME config config value return log TODO
