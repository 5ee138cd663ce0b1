/* phases MS: burns MS milliseconds of its own CPU time in phase_two(), then as long in
 * phase_one() (both noinline, called from main): a flame chart shows phase_two's
 * stacks before phase_one's, the reverse of their names' order, which a sorted (merged)
 * flame graph follows. */
#include <stdlib.h>
#include <time.h>

void *volatile frame_sink;

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) unsigned long phase_one(double ms)
{
	frame_sink = __builtin_frame_address(0);
	unsigned long x = 1;
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long phase_two(double ms)
{
	frame_sink = __builtin_frame_address(0);
	unsigned long x = 3;
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 300;
	unsigned long two = phase_two(ms);
	unsigned long one = phase_one(ms);
	return (int)((one ^ two) & 1) * 0;
}
