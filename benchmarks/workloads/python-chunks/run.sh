# inputs: A B C D
# A python script reading a folder of data chunks. A: one month. B: another month, a
# CSV into a new reports/ folder. C: both months with a config file from conf/. D: the
# other month with an index written into a new folder and the config.
set -eu
case "$1" in
A) python3 report.py 2026-10 ;;
B) python3 report.py 2026-11 --csv reports/kinds.csv ;;
C) python3 report.py 2026-10 2026-11 --config conf/report.json ;;
D) python3 report.py 2026-11 --config conf/report.json --index index/2026-11 ;;
esac
