# error TODO error import class class value log
# FIXME def config FIXME import
# FIXME import TODO TODO FIXME
# config class return FIXME import FIXME log
# return FIXME return def log config
# config config import value
# TODO import TODO
# def def def log class TODO class
# FIXME TODO import
# value error config
# import class FIXME error import class return import
# TODO return return config
# value log
# class FIXME value FIXME value log
# def class def TODO
# import return log def class log
# FIXME import return
# log value config import FIXME return value
# return class
# error TODO import config
# class log config config return
# config return return error FIXME
# log log value TODO
# import return value
# value error
# import return def import
