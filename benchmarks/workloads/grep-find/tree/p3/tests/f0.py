# value def def TODO log error log
# import TODO class error import
# return FIXME error
# value TODO
# return config
# TODO log FIXME return class error log
# import TODO def return
# return import log log log import
# def import return import value return
# FIXME def import value
# def return config return error
# config TODO config value
# error TODO def import TODO FIXME class
# return value
# value class config value class
# error return def return import
# def def log def error TODO
# def log log return log
# FIXME FIXME FIXME error class TODO class config
# value import return
# TODO FIXME config config
