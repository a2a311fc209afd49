# FIXME return value TODO TODO import error
# error TODO config import log
# TODO import log def return def config
# error import FIXME return value
# import FIXME log
# def return TODO log import error config value
# TODO TODO log
# TODO return class log return
# FIXME value class value class TODO value
# import FIXME
# log config error FIXME value error config
# TODO error import
# return import FIXME
# log import value config TODO
# return return
# FIXME import TODO error TODO TODO class
# error import log
