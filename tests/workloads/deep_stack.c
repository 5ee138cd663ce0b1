/* deep_stack MS: spins for about MS milliseconds of CPU time at the bottom of a
 * recursion 100 frames deep, each frame holding 2 KiB: a user stack of about 200 KiB,
 * deeper than the largest copy the kernel takes for DWARF unwinding (65528 bytes). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile unsigned long sink;

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void down(int depth, double ms)
{
	volatile char frame[2048];
	memset((char *)frame, depth, sizeof frame);
	if (depth > 0) {
		down(depth - 1, ms);
	} else {
		double start = cpu_ms();
		while (cpu_ms() - start < ms)
			for (int i = 0; i < 10000; i++)
				sink += i;
	}
	sink += frame[depth % sizeof frame];
}

int main(int argc, char **argv)
{
	down(100, argc > 1 ? atof(argv[1]) : 200);
	return 0;
}
