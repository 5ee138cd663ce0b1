/* calls N: call hot_function exactly N times (for uprobe counts). */
#include <stdio.h>
#include <stdlib.h>

volatile long acc;

__attribute__((noinline)) int hot_function(int x)
{
	asm volatile("" ::: "memory");
	acc += x;
	return x + 1;
}

__attribute__((noinline)) long slow_function(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		asm volatile("" ::: "memory");
		s += i ^ acc;
	}
	acc += s;
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: calls N [SLOW_ITERS]\n");
		return 2;
	}
	long n = atol(argv[1]);
	for (long i = 0; i < n; i++) {
		hot_function((int)i);
		asm volatile("" ::: "memory");
	}
	if (argc > 2)
		slow_function(atol(argv[2]));
	return 0;
}
