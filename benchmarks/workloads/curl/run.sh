# curl against a loopback HTTP server started in the sandbox.
# A: download one file, to stdout and with -o. B: headers only, a download to a file with -o, a missing page
# with -w for the status, and a POST (the server refuses it with 501).
set -eu
port=18432
python3 -m http.server --bind 127.0.0.1 --directory site "$port" 2>server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for i in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
if [ "$1" = A ]; then
    curl -sS "http://127.0.0.1:$port/a.txt"
    curl -sS -o got.txt "http://127.0.0.1:$port/a.txt" && cmp got.txt site/a.txt && echo same
else
    curl -sS -o /dev/null -I -w '%{http_code} %{content_type}\n' "http://127.0.0.1:$port/index.html"
    curl -sS -o got.txt "http://127.0.0.1:$port/data.txt" && cmp got.txt site/data.txt && echo same
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/nope"
    curl -s -o /dev/null -w '%{http_code}\n' -d 'x=1' "http://127.0.0.1:$port/a.txt"
fi
