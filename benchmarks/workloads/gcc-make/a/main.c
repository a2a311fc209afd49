#include <stdio.h>
int main(void) { printf("hello %d\n", 6 * 7); return 0; }
