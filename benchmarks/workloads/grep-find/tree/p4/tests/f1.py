# return TODO class import return TODO
# class error
# def def config return return
# class return import TODO
# class import config error def log FIXME value
# value value def
# def class log log import log
# def value config TODO log import log config
# import class value def error FIXME import config
# import class log def
# config value def log def error log class
# TODO import config value error def TODO
# def config
# import log log def TODO value
# import return return log log
# config return error TODO class
# FIXME class def log def def
# return FIXME config FIXME
# FIXME class import TODO error config FIXME
# log class def log FIXME error import
# FIXME def TODO return log config config value
# config def
# FIXME return log value
# value log config config TODO
# def FIXME config TODO config TODO
# log FIXME log return config log
# log def value FIXME def import import
# import return value error
