# inputs: A B C D
# Archivers packing a project into a new output folder, each input another format and
# options. A: tar with xz into dist/. B: tar with zstd into release/, excluding docs, then
# listed. C: bzip2 and gzip of single files into pkg/, tested. D: a tar.xz made, then
# unpacked into a new folder and compared.
set -eu
case "$1" in
A) mkdir dist; tar -cJf dist/project.tar.xz project; tar -tJf dist/project.tar.xz | sort ;;
B) mkdir release
   tar --zstd --exclude=docs -cf release/src.tar.zst project
   zstd -q -t release/src.tar.zst && tar --zstd -tf release/src.tar.zst | sort | wc -l ;;
C) mkdir pkg
   bzip2 -c project/src/mod5.txt > pkg/mod5.txt.bz2; bzip2 -t pkg/mod5.txt.bz2
   gzip -9 -c project/src/mod4.txt > pkg/mod4.txt.gz; gzip -l pkg/mod4.txt.gz | tail -n 1 | awk '{print $2}'
   xz -c project/docs/README.md | xz -dc ;;
D) tar -cJf p.tar.xz project; mkdir unpacked; tar -xJf p.tar.xz -C unpacked
   diff -r project unpacked/project && echo same; xz -l p.tar.xz | tail -n 1 | awk '{print $5, $6}' ;;
esac
