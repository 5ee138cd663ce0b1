/* writer N: write the global watched_var exactly N times (for mem: breakpoints). */
#include <stdio.h>
#include <stdlib.h>

/* Initialised, so it lives in .data: a .bss variable sharing the last page of
 * .data is zeroed by the kernel's ELF loader at exec, and those kernel-mode
 * writes would count too (4 extra on x86-64). */
volatile long watched_var = 1;
volatile long other_var;

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: writer N\n");
		return 2;
	}
	long n = atol(argv[1]);
	for (long i = 0; i < n; i++) {
		watched_var = i;
		other_var = watched_var;
	}
	return 0;
}
