# error error FIXME def value def
# def TODO return import
# log import def FIXME TODO config config
# return value FIXME import import value def
# log class error
# log class
