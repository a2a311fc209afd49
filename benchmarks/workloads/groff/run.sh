# groff rendering manual pages to text. A: a man page, for a terminal. B: a page with a
# table (the tbl preprocessor), as UTF-8 without escapes, into a new out/ folder, then the
# table's rows.
set -eu
if [ "$1" = A ]; then
    groff -man -Tascii tool.1 | grep -v '^$' | sed 's/  */ /g' | head -n 6
else
    mkdir out
    groff -t -man -Tutf8 -P-cbou table.1 > out/table.txt
    grep -c . out/table.txt
    grep -E '^ *│ *[0-9]' out/table.txt | tr -s ' '
fi
