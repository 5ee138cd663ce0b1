/* chatty N SPIN_MS SLEEP_MS: calls tick() N times; each prints "chatty I" to stdout
 * (flushed), spins SPIN_MS ms of CPU time, then sleeps SLEEP_MS ms. Nothing goes to
 * stderr: tests check that the data hwprof writes never mixes with a target's output. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

volatile unsigned long acc;

__attribute__((noinline)) void tick(int i, long spin_ms, long sleep_ms)
{
	printf("chatty %d\n", i);
	fflush(stdout);
	double start = cpu_ms();
	while (cpu_ms() - start < spin_ms)
		for (int k = 0; k < 10000; k++)
			acc += k;
	struct timespec req = { .tv_sec = sleep_ms / 1000, .tv_nsec = (sleep_ms % 1000) * 1000000L }, rem;
	while (sleep_ms > 0 && nanosleep(&req, &rem) != 0)
		req = rem;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int n = atoi(argv[1]);
	for (int i = 0; i < n; i++)
		tick(i, atol(argv[2]), atol(argv[3]));
	return 0;
}
