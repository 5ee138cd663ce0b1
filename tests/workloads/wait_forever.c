/* wait_forever: sleep 10 ms at a time forever (for -p/-t attach tests).
 * Prints "ready" on stdout once running. An optional argument MS makes it exit
 * after about MS milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long limit = argc > 1 ? atol(argv[1]) : -1;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000000L };
	printf("ready\n");
	fflush(stdout);
	for (long i = 0; limit < 0 || i * 10 < limit; i++)
		nanosleep(&ts, NULL);
	return 0;
}
