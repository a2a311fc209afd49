# inputs: A B C D
# A report over text files with coreutils, each input with other programs, as a script
# an agent writes does. A: sort, uniq, head over words. B: cut, join, paste, tac, comm
# over two tables. C: split a log into parts in a new folder, then wc, md5sum. D: nl,
# fold, fmt, expand, tr, numfmt over the same tables.
set -eu
tab=$(printf '\t')
case "$1" in
A)
    tr ' ' '\n' < words.txt | sort | uniq -c | sort -k1,1nr -k2 | head -n 5
    ;;
B)
    cut -f1,2 people.tsv > names.tsv
    join -t "$tab" names.tsv scores.tsv | sort -t "$tab" -k3,3nr | head -n 3
    cut -f2 people.tsv | paste -sd, -
    tac people.tsv | head -n 2
    cut -f3 people.tsv | sort -u > teams.txt
    printf 'dev\nsec\n' | comm -13 teams.txt -
    ;;
C)
    mkdir -p parts
    split -l 25 -d access.log parts/log.
    ls parts | wc -l
    wc -l parts/* | tail -n 1
    md5sum parts/log.00 | cut -d' ' -f1
    ;;
D)
    nl -ba people.tsv | expand -t 4 | head -n 3
    fold -w 20 words.txt | head -n 2
    fmt -w 30 words.txt | wc -l
    cut -f2 scores.tsv | tr '\n' + | sed 's/+$//'
    echo
    numfmt --to=iec 1048576 2500000
    ;;
esac
