# Python multiprocessing: pools, processes, queues, locks (see work.py).
set -eu
python3 work.py "$1"
