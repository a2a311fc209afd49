#include <stdio.h>
#include "calc.h"
int main(void) { printf("%d %d\n", add(2, 3), mul(4, 5)); return 0; }
