# value TODO
# FIXME log class log TODO
# import return import
# error TODO def config
# log import value class value config
# FIXME return return FIXME return return class import
# value error value config
