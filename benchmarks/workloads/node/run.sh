# node running a script. A: read a JSON file and report. B: another file, then zlib, a
# file written under a new folder, a child node process and a worker thread.
set -eu
node tool.js "$1"
