# wget against a loopback web server started here. A: one page by IP, to stdout.
# B: by name (localhost), a recursive download into a new folder, then what it saved.
set -eu
port=18474
python3 -m http.server --bind 127.0.0.1 --directory site "$port" 2>server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for i in $(seq 1 100); do
    wget -q -O /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
if [ "$1" = A ]; then
    wget -q -O - "http://127.0.0.1:$port/docs/one.html"
else
    wget -q -r -l 2 -nH -P mirror "http://localhost:$port/index.html"
    find mirror -type f | sort
fi
