# class def
# class config return error
# value config
# value log def log
# return FIXME import
# value TODO value def
# error FIXME import error log TODO def
# error error FIXME log
# FIXME class value value
# log error FIXME config class class log value
# config return class log def FIXME
# import value def FIXME log log error class
# log value value value
# config TODO config
# value value class log log TODO TODO
