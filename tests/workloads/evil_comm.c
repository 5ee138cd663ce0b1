/* evil_comm MS SLEEP_MS: names itself "a<ESC>[31mb<LF>c;d<TAB><0xff>" (prctl
 * PR_SET_NAME: a terminal escape, a line break, folded stacks' separator, a tab and a
 * byte that is not UTF-8), then burns MS milliseconds of CPU in spin() and sleeps
 * SLEEP_MS milliseconds in nap(): what hwprof prints of it must stay on its lines. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

volatile unsigned long sink;

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

__attribute__((noinline)) void spin(long ms)
{
	long end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

__attribute__((noinline)) void nap(long ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: evil_comm MS SLEEP_MS\n");
		return 2;
	}
	if (prctl(PR_SET_NAME, "a\x1b[31mb\nc;d\t\xff", 0, 0, 0) != 0) {
		perror("prctl");
		return 1;
	}
	spin(atol(argv[1]));
	nap(atol(argv[2]));
	return 0;
}
