# inputs: A B C D
# make, cc and ar build a static library. A: the library, and its members. B: the test
# program linked against it, run, and the symbols (nm). C: a debug build in another
# folder, in parallel, then ranlib and a size report. D: install into a new prefix.
set -eu
case "$1" in
A) make -s lib; ar t build/libcalc.a ;;
B) make -s test; nm build/libcalc.a | grep ' T ' | sort ;;
C) make -s -j2 BUILD=debug CFLAGS='-O0 -g' lib; ranlib debug/libcalc.a; ar t debug/libcalc.a | wc -l ;;
D) make -s install PREFIX=dist; find dist -type f | sort; ./dist/bin/calc ;;
esac
