# inputs: A B C D
# A python client (urllib) against a loopback web server started here. A: by IP, one
# file. B: by name (localhost), the index and a download into a new folder. C: by IP,
# HEAD requests and two files. D: by name, downloads into another new folder.
set -eu
port=18473
python3 -m http.server --bind 127.0.0.1 --directory site "$port" 2>server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close(); break
    except OSError:
        time.sleep(0.1)
PY
case "$1" in
A) python3 fetch.py 127.0.0.1 "$port" a.txt ;;
B) python3 fetch.py localhost "$port" index save:b.txt,downloads/b.txt ;;
C) python3 fetch.py 127.0.0.1 "$port" head:a.txt head:index.json b.txt a.txt ;;
D) python3 fetch.py localhost "$port" save:index.json,mirror/index.json save:a.txt,mirror/a.txt ;;
esac
