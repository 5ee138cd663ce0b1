/* dwarf_lib: outer -> middle -> leaf in a shared library (libdwarf_lib.so), called by
 * dwarf_chain built with -DSHARED. Built with -O2 -fomit-frame-pointer -fPIC. */
extern volatile unsigned long sink;

__attribute__((noinline)) void lib_leaf(long n)
{
	for (long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) void lib_middle(long n)
{
	lib_leaf(n);
	sink++;
}

__attribute__((noinline)) void outer(long n)
{
	lib_middle(n);
	sink++;
}
