# class log TODO FIXME FIXME
# import return return def FIXME class config
# return return return FIXME log
# config class log def config
# import def error value
# class import
# log value return log return config config
# FIXME def log FIXME value return class return
# config import
# config log error
# return value import class import error log
# config value FIXME error import value value import
# TODO error class log
# config import class FIXME error class log
# return import
# TODO return import def return class value
