/* flame_inline MS: for MS milliseconds of CPU time, alternates between work in
 * an always-inlined function (spin_inlined, inlined into the noinline caller
 * outer_spin: DWARF records it as an inlined subroutine) and system calls
 * (sys_heavy: getppid in a loop, so that samples land in the kernel too).
 * Prints "rounds N X". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *volatile frame_sink;

static inline __attribute__((always_inline)) unsigned long spin_inlined(unsigned long x)
{
	for (unsigned long i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long outer_spin(unsigned long x)
{
	frame_sink = __builtin_frame_address(0);
	return spin_inlined(x);
}

__attribute__((noinline)) unsigned long sys_heavy(unsigned long x)
{
	frame_sink = __builtin_frame_address(0);
	for (int i = 0; i < 2000; i++)
		x += (unsigned long)getppid();
	return x;
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 300;
	unsigned long x = 1, rounds = 0;
	double end = cpu_ms() + ms;
	do {
		x = outer_spin(x);
		x = sys_heavy(x);
		rounds++;
	} while (cpu_ms() < end);
	printf("rounds %lu %lu\n", rounds, x & 1);
	return 0;
}
