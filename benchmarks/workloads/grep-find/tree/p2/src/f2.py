# log FIXME class error value TODO return config
# return value return class return return return
# FIXME class value
# log log
# config import class TODO FIXME error
# error value config return
# value def error log
# error value class value
# def TODO TODO error error class FIXME
# import FIXME error
# def TODO log import FIXME
# value return config def class log config class
# value config TODO class import
# FIXME FIXME return
# config return value
# class value log FIXME import FIXME config
