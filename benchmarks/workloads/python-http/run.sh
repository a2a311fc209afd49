# A Python HTTP server and client over loopback, both inside the sandbox.
# A: two files. B: a JSON file, a directory listing, a missing page and a HEAD request.
set -eu
port=18431
python3 -m http.server --bind 127.0.0.1 --directory site "$port" 2>server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)
PY
if [ "$1" = A ]; then
    python3 fetch.py A "$port" /index.txt /docs/numbers.txt
else
    python3 fetch.py B "$port" /docs/status.json /docs/ /missing.txt
    python3 -c "import http.client as h; c = h.HTTPConnection('127.0.0.1', $port); c.request('HEAD', '/index.txt'); print('HEAD', c.getresponse().status)"
fi
