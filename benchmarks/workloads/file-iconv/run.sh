# Sorting out files of unknown kinds. A: file names the type of each (libmagic's
# database). B: the encodings found (file -i), a Latin-1 file converted to UTF-8 into a new
# folder with iconv, the archive looked into (file -z).
set -eu
if [ "$1" = A ]; then
    file -b in/* | cut -d, -f1
else
    file -b -i in/latin1.txt in/ascii.txt
    mkdir utf8
    iconv -f LATIN1 -t UTF-8 in/latin1.txt > utf8/latin1.txt
    cat utf8/latin1.txt
    file -b -z in/ascii.txt.gz | cut -d, -f1
fi
