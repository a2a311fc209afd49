"""Fetch one URL and print its body: honours HTTP(S)_PROXY like most HTTP clients."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    sys.stdout.write(response.read().decode())
