"""cvg's trusted base: kernel confinement primitives through ctypes.

Standard library only. The code here runs between fork and exec, so it imports
nothing else and allocates as little as it can once a plan is prepared.
"""

__version__ = "0.1.0"
