# grep and find over a source tree. A: every TODO with its line, and the Python files.
# B: case-insensitive, whole-word and --include searches, files by size and depth,
# counts through xargs, and a find -exec.
set -eu
if [ "$1" = A ]; then
    grep -rn TODO tree | sort | head -20
    find tree -name '*.py' | sort | head -20
    find tree -name '*.md' | wc -l
else
    grep -rli --include='*.md' fixme tree | sort
    grep -rwc error tree | sort -t: -k2nr -k1 | head -3
    find tree -maxdepth 3 -type f -size +1k | sort
    find tree -name '*.txt' -print0 | xargs -0 cat | wc -l
    find tree -path '*tests*' -name 'f0.py' -exec grep -c def {} + | sort
fi
