/* offcpu_gaps N SLEEP_US SPIN_US: N times, gap_sleep() sleeps SLEEP_US (nanosleep) and
 * then gap_spin() runs SPIN_US on the CPU, so the thread runs between its blocks (as
 * offcpu_ab's threads barely do). gap_sleep measures each of its sleeps with
 * CLOCK_MONOTONIC around the call and, at the end, prints the sum to stderr:
 * "slept_us TOTAL". Off-CPU time under gap_sleep is that, less the few µs of each
 * call spent on the CPU entering and leaving the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* libc's nanosleep keeps no frame pointer, so the fp unwinder skips its caller's
 * frame: this helper takes that place and keeps gap_sleep on the stacks. */
__attribute__((noinline)) void nap(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };
	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) long gap_sleep(long us)
{
	long t0 = now_ns();
	nap(us);
	return now_ns() - t0;
}

volatile long acc;

__attribute__((noinline)) void gap_spin(long us)
{
	long end = now_ns() + us * 1000;
	while (now_ns() < end)
		acc++;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: offcpu_gaps N SLEEP_US SPIN_US\n");
		return 2;
	}
	long n = atol(argv[1]), sleep_us = atol(argv[2]), spin_us = atol(argv[3]);
	long slept = 0;
	for (long i = 0; i < n; i++) {
		slept += gap_sleep(sleep_us);
		gap_spin(spin_us);
	}
	fprintf(stderr, "slept_us %ld\n", slept / 1000);
	return 0;
}
