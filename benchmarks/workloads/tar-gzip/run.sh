# tar and gzip: pack a tree, list it, unpack it elsewhere and compare.
# A: a tree of text files, and one file compressed alone and read back with gzip -dc.
# B: two trees with --exclude, and the single file at -9, read back with gunzip -c.
set -eu
if [ "$1" = A ]; then
    tar -czf out.tar.gz data
    gzip -k data/docs/n1.txt && mv data/docs/n1.txt.gz one.gz
    gzip -dc one.gz | md5sum | cut -d' ' -f1
else
    tar -czf out.tar.gz --exclude='*.c' data more
    gzip -9 -k more/m5.txt && mv more/m5.txt.gz one.gz
    gunzip -c one.gz | md5sum | cut -d' ' -f1
fi
tar -tzf out.tar.gz | sort
mkdir unpacked
tar -xzf out.tar.gz -C unpacked
diff -r -x '*.c' data unpacked/data && echo same
gzip -l out.tar.gz | tail -1 | awk '{print $2}'
