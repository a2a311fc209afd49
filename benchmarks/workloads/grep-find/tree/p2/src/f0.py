# TODO def FIXME return
# value TODO return import log value
# log class class class
# return return import return log log class
# error class import def FIXME
# FIXME error config
# import class
# config def value value value FIXME config class
# def FIXME log log
# return TODO def TODO import config return config
# FIXME log FIXME error
# value class return config log class
# error TODO config value FIXME TODO config
# error FIXME error
# FIXME config error import import
# return error config
# config config log
# def TODO return
# value log FIXME value TODO import config
# FIXME class def log def log
# log return
# value log
# def log
