# FIXME config class return
# TODO return log def error value value config
# def import
# def value value TODO class log value return
# value import import
# log class config log error TODO
# log TODO def def return
# FIXME log error FIXME FIXME
# def error value
# import TODO
# return FIXME value
# return class value return error FIXME
# error error def error import error config
# TODO def error return import
# value return config log value config
# error return
# class FIXME import
# error TODO config class value class def def
# FIXME TODO
