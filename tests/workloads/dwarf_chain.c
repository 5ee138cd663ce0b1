/* dwarf_chain: main -> outer -> middle -> leaf, for DWARF unwinding tests. Built with
 * -O2 -fomit-frame-pointer (tests/dwarf.rs), so frame pointers cannot find the callers:
 * only the unwind tables can. With -DSHARED, outer/middle/leaf live in a shared library
 * (dwarf_lib.c) instead. Runs about ARGV[1] x 100 ms. */
#include <stdlib.h>

volatile unsigned long sink;

#ifdef SHARED
void outer(long n);
#else
__attribute__((noinline)) void leaf(long n)
{
	for (long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) void middle(long n)
{
	leaf(n);
	sink++;
}

__attribute__((noinline)) void outer(long n)
{
	middle(n);
	sink++;
}
#endif

int main(int argc, char **argv)
{
	long tenths = argc > 1 ? atol(argv[1]) : 5;
	for (long r = 0; r < tenths * 230; r++)
		outer(1000000);
	return 0;
}
