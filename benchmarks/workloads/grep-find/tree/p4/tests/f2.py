# config log TODO return log def def def
# error TODO import value
# class TODO
# return value value error log import config log
# value return return class
# def error class value return
# error value
# class value class TODO def
# error def def value class value return
# value import import error error value return FIXME
