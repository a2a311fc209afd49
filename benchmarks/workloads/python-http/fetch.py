"""Fetch pages from the loopback server and print what came back, in a stable form."""

import hashlib
import sys
import urllib.error
import urllib.request

PORT = int(sys.argv[2])
PATHS = sys.argv[3:]

for path in PATHS:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=10) as r:
            body = r.read()
            digest = hashlib.sha256(body).hexdigest()[:16]
            print(path, r.status, r.headers.get_content_type(), digest)
    except urllib.error.HTTPError as e:
        print(path, e.code)
