/* sleeper K MS: nanosleep K times MS milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sleeper K MS\n");
		return 2;
	}
	long k = atol(argv[1]);
	long ms = atol(argv[2]);
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	for (long i = 0; i < k; i++) {
		struct timespec req = ts, rem;
		while (nanosleep(&req, &rem) != 0)
			req = rem;
	}
	return 0;
}
