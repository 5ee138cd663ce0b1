/* fp_chain: main -> top -> mid -> leaf (and mid -> mid2 -> leaf), ~0.3 s of arithmetic
 * in leaf. Built twice by tests/frame_pointers.rs: -O2 -fomit-frame-pointer (every
 * function uses %rbp for data: frame-pointer stacks stop after one or two frames) and
 * -O2 -fno-omit-frame-pointer (whole stacks). The arrays give every function a frame. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long leaf(long *v, int n)
{
	long s = 0;
	for (int r = 0; r < 2000; r++)
		for (int i = 0; i < n; i++)
			s += v[i] * (i ^ r);
	return s;
}

__attribute__((noinline)) long mid2(int n)
{
	long w[64];
	for (int i = 0; i < 64; i++)
		w[i] = i * n;
	return leaf(w, 64);
}

__attribute__((noinline)) long mid(int n)
{
	long v[64];
	for (int i = 0; i < 64; i++)
		v[i] = rand();
	return leaf(v, n) + mid2(n);
}

__attribute__((noinline)) long top(int n)
{
	long t = 0;
	for (int i = 0; i < n; i++)
		t += mid(i % 64);
	return t;
}

int main(int argc, char **argv)
{
	long t = top(argc > 1 ? atoi(argv[1]) : 3000);
	printf("%ld\n", t);
	return 0;
}
