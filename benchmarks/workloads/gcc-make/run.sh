# gcc and make. A: one C file into a program, run it. B: a program of two objects and a
# header linked with libm, built, cleaned and rebuilt at -O2 in parallel, run with
# arguments.
set -eu
if [ "$1" = A ]; then
    make -s -C a
    ./a/hello
else
    make -s -C b
    ./b/calc 100
    make -s -C b clean
    make -s -j2 -C b CFLAGS=-O2
    ./b/calc 7
fi
