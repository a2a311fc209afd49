# A log/text report: a shell pipeline with sort, uniq, awk and sed.
# A: word frequencies of a text file. B: the same report on a web server log, by the
# status field, with the options a user changes (another field, a reverse sort, a filter).
set -eu
if [ "$1" = A ]; then
    file=words.txt field=1 top=5 order=-rn filter=.
else
    file=access.log field=9 top=10 order=-k1n filter=' [45][0-9][0-9] '
fi
awk -v f="$field" '{print $f}' "$file" | sort | uniq -c | sort $order | head -n "$top" \
    | sed 's/^ *//' | awk '{printf "%-8s %s\n", $2, $1}'
sed -n "/$filter/p" "$file" | sort -u -o uniq.txt
awk 'END {print NR " distinct lines"}' uniq.txt
