# jq over JSON documents. A: names and a sum from one document. B: a stream of JSON lines
# grouped and counted, a bigger document filtered with select, reshaped and exported
# as CSV, and a file written with the result.
set -eu
if [ "$1" = A ]; then
    jq -r '.items[].name' small.json | head -3
    jq '[.items[].size] | add' small.json
else
    jq -s 'group_by(.kind) | map({kind: .[0].kind, n: length, ms: (map(.ms) | add)})' -c events.jsonl
    jq -r '.items[] | select(.size > 2500 and (.tags | index("web"))) | [.name, .size] | @csv' big.json
    jq --arg min 3 '[.items[] | select((.deps | length) >= ($min | tonumber))] | length' big.json
    jq '.items | map({(.name): .version}) | add' big.json > versions.json
    jq -e 'length' versions.json
fi
