#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "util.h"
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    printf("sum %d sqrt %.3f\n", sum_to(n), sqrt((double)n));
    return 0;
}
