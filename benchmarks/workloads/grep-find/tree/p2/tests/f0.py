# import return def return value def FIXME
# error log config
# return value def error
# value import
# import return value
# log config def value TODO TODO error
# return class class TODO FIXME class class value
# import def
# def TODO TODO import
# return class error FIXME log
# import value class def return FIXME
# class TODO class def error class
# def def error class
# FIXME class class
# return log log config
# import def log
# TODO error import return class
# config import value config error
# error import TODO value FIXME
