# zip and unzip. A: zip a tree, list it, unzip it elsewhere and compare.
# B: zip a tree, then add another with -u, delete an entry with -d, test the archive,
# unzip one file to stdout and the rest with -o into a folder made for it.
set -eu
zip -q -X -r out.zip docs
if [ "$1" = B ]; then
    zip -q -X -u -r out.zip extra
    zip -q -d out.zip docs/README
    unzip -tq out.zip
    unzip -p out.zip extra/e1.txt | sort -n | diff - extra/e1.txt && echo same-e1
fi
unzip -Z1 out.zip | sort
unzip -q -o out.zip -d unpacked
diff -r -x README docs unpacked/docs && echo same
