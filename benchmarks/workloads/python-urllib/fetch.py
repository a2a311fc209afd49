"""Fetch files from a local web server: a client an agent's tool writes."""

import json
import pathlib
import sys
import urllib.request

host, port, what = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
base = f"http://{host}:{port}"
for item in what:
    if item == "index":
        data = json.load(urllib.request.urlopen(f"{base}/index.json", timeout=10))
        print("version", data["version"], "files", len(data["files"]))
    elif item.startswith("save:"):
        name, dest = item[5:].split(",")
        pathlib.Path(dest).parent.mkdir(parents=True, exist_ok=True)
        urllib.request.urlretrieve(f"{base}/{name}", dest)
        print("saved", dest, pathlib.Path(dest).stat().st_size)
    elif item.startswith("head:"):
        req = urllib.request.Request(f"{base}/{item[5:]}", method="HEAD")
        print("head", urllib.request.urlopen(req, timeout=10).status)
    else:
        print(item, urllib.request.urlopen(f"{base}/{item}", timeout=10).read().decode().strip())
