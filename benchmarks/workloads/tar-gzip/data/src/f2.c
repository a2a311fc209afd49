int f2(void) { return 2; }
