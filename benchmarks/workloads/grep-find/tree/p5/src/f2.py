# class class log TODO
# log log error import import error error
# log config value
# FIXME import value TODO
# import def def TODO import TODO value
# TODO config FIXME return
# config return
# import class error
# value return def FIXME config def FIXME def
# error class class value value value config
