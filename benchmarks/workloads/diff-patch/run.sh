# inputs: A B C D
# diff and patch, as a code-review tool runs them. A: a unified diff of two files.
# B: a patch applied to a copy in a new folder, then checked against the new version.
# C: a recursive diff with a new file (-N), and cmp. D: a patch made, reversed, and
# applied with a backup into another folder.
set -eu
case "$1" in
A) diff -u v1/a.txt v2/a.txt | tail -n +3 || true ;;
B) mkdir work && cp v1/a.txt work/ && patch -s work/a.txt < patches/a.diff && cmp work/a.txt v2/a.txt && echo applied ;;
C) diff -ruN v1 v2 | grep -c '^[-+][^-+]' || true; cmp -s v1/b.txt v2/b.txt && echo b-same ;;
D) diff -ruN v1 v2 > all.diff || true
   mkdir -p review/tree && cp -r v1/. review/tree/
   patch -s -d review/tree -p1 -b < all.diff && patch -s -R -d review/tree -p1 < all.diff
   diff -r v1 review/tree | grep -c orig || true ;;
esac
