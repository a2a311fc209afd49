# npm packing a local package, offline. A: what would be packed (--dry-run --json).
# B: the tarball written into a new dist/ folder, then listed with tar.
set -eu
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
cd pkg
if [ "$1" = A ]; then
    npm pack --dry-run --json --offline 2>/dev/null | node -e 'const p = JSON.parse(require("fs").readFileSync(0))[0]; console.log(p.name, p.version, p.files.map(f => f.path).sort().join(","))'
else
    mkdir ../dist
    npm pack --offline --pack-destination ../dist >/dev/null 2>&1
    tar -tzf ../dist/tiny-sum-1.0.0.tgz | sort
fi
