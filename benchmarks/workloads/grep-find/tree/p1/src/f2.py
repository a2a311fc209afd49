# def TODO class
# class def return def
# FIXME log def
# error log TODO
# log TODO value def value TODO value
# value return def class return
# FIXME return error return TODO value
# config FIXME value
# value log class TODO FIXME def error FIXME
# value def log
# log log value def error error TODO class
# error config
# return import config config def FIXME
# class return config error
# TODO class
# def value FIXME log FIXME
# class error TODO return return class
# class TODO value
# config return class value error
# class class
# FIXME log return import TODO return value
