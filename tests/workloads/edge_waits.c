/* edge_waits SLEEP_MS SPIN_MS: waits at both edges of an `offcpu -p` window.
 * Prints "ready" on stdout, sleeps SLEEP_MS under first_sleep (the window opens during
 * it), spins SPIN_MS of wall time under spin_part, prints
 * "edge_waits: spin_us S since_ready_us R" to stderr (the spin's wall time, and the
 * time from "ready" to the end of the spin, CLOCK_MONOTONIC), then sleeps until killed
 * under final_sleep (the window closes during it). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The libc wrapper keeps no frame pointer: this helper takes the frame the fp unwinder
 * skips, keeping its caller on the stacks. */
__attribute__((noinline)) void nap(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) void first_sleep(long ms)
{
	nap(ms);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void spin_part(long ms)
{
	long end = now_ns() + ms * 1000000L;
	volatile unsigned long x = 0;
	while (now_ns() < end)
		x++;
}

__attribute__((noinline)) void final_sleep(void)
{
	for (;;)
		nap(3600 * 1000L);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: edge_waits SLEEP_MS SPIN_MS\n");
		return 2;
	}
	long ready = now_ns();
	printf("ready\n");
	fflush(stdout);
	first_sleep(atol(argv[1]));
	long t0 = now_ns();
	spin_part(atol(argv[2]));
	long t1 = now_ns();
	fprintf(stderr, "edge_waits: spin_us %ld since_ready_us %ld\n", (t1 - t0) / 1000,
		(t1 - ready) / 1000);
	final_sleep();
	return 0;
}
