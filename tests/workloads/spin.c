/* spin MS: busy-loop for MS milliseconds of this process's CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: spin MS\n");
		return 2;
	}
	double ms = atof(argv[1]);
	double start = cpu_ms();
	volatile unsigned long x = 0;
	while (cpu_ms() - start < ms) {
		for (int i = 0; i < 10000; i++)
			x += i;
	}
	return 0;
}
