# error error TODO value config FIXME config config
# TODO import import log FIXME def
# config return log
# log return class log TODO import
# FIXME config config FIXME config TODO
# return FIXME def import
# class config
# TODO log error
