/* probe_lat: calls work(us) with known durations, for `hwprof probe`.
 *   probe_lat N_FAST FAST_US N_SLOW SLOW_US   every 10th call is slow until N_SLOW are done
 *   probe_lat loop                            prints "ready", then work(100) every 10 ms forever
 *   probe_lat empty N                         calls empty() N times (probe overhead)
 *   probe_lat recurse N DEPTH                 calls rec(DEPTH) N times: rec(d) busy-waits
 *                                             100 us, then calls rec(d - 1) until d is 1,
 *                                             so a call at depth k lasts (DEPTH - k + 1) * 100 us;
 *                                             every call timed as the first form's are
 * The first form has every call of work() time itself (CLOCK_MONOTONIC, from its first
 * clock read to its last: inside what a uprobe/uretprobe pair measures; a loaded machine
 * stretches a busy-wait preempted near its end) and prints the durations to stderr at
 * the end, in call order: "probe_lat: durations_ns D1 D2 ...". main also times each
 * call from outside (a clock read before the call and one after it return: around the
 * uprobe and uretprobe hits) and prints "probe_lat: outer_ns O1 O2 ...". A probe's
 * duration of a call lies between the two, however the machine is loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile long acc;

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The duration of the last call of work(), as it timed itself. */
long last_work_ns;

__attribute__((noinline)) void work(int us)
{
	long start = now_ns(), end = start + (long)us * 1000, t;
	while ((t = now_ns()) < end)
		acc++;
	last_work_ns = t - start;
}

__attribute__((noinline)) void empty(void)
{
	asm volatile("" ::: "memory");
}

/* recurse: each call of rec() timed from inside (rec_in) and by its caller, around the
 * call (rec_out), by the call's number in entry order. */
static long *rec_in, *rec_out;
static int rec_n;

__attribute__((noinline)) void rec(int d)
{
	long start = now_ns();
	int me = rec_n++;
	work(100);
	if (d > 1) {
		int child = rec_n;
		long before = now_ns();
		rec(d - 1);
		rec_out[child] = now_ns() - before;
	}
	rec_in[me] = now_ns() - start;
	asm volatile("" ::: "memory"); /* no tail call */
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "recurse") == 0) {
		int n = atoi(argv[2]), d = atoi(argv[3]);
		int calls = (n > 0 ? n : 0) * (d > 0 ? d : 0);
		rec_in = calloc(calls > 0 ? calls : 1, sizeof(long));
		rec_out = calloc(calls > 0 ? calls : 1, sizeof(long));
		if (!rec_in || !rec_out)
			return 1;
		for (int i = 0; i < n; i++) {
			int me = rec_n;
			long before = now_ns();
			rec(d);
			rec_out[me] = now_ns() - before;
		}
		fprintf(stderr, "probe_lat: durations_ns");
		for (int i = 0; i < rec_n; i++)
			fprintf(stderr, " %ld", rec_in[i]);
		fprintf(stderr, "\nprobe_lat: outer_ns");
		for (int i = 0; i < rec_n; i++)
			fprintf(stderr, " %ld", rec_out[i]);
		fprintf(stderr, "\n");
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "loop") == 0) {
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			work(100);
			usleep(10000);
		}
	}
	if (argc == 3 && strcmp(argv[1], "empty") == 0) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			empty();
		return 0;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: probe_lat N_FAST FAST_US N_SLOW SLOW_US | loop | empty N | recurse N DEPTH\n");
		return 2;
	}
	int nf = atoi(argv[1]), fu = atoi(argv[2]), ns = atoi(argv[3]), su = atoi(argv[4]);
	int total = (nf > 0 ? nf : 0) + (ns > 0 ? ns : 0), n = 0;
	long *dur = malloc(sizeof(long) * (total > 0 ? total : 1));
	long *outer = malloc(sizeof(long) * (total > 0 ? total : 1));
	if (!dur || !outer) {
		perror("malloc");
		return 1;
	}
	for (int i = 0; nf > 0 || ns > 0; i++) {
		long before = now_ns();
		if (ns > 0 && (i % 10 == 9 || nf == 0)) {
			work(su);
			ns--;
		} else {
			work(fu);
			nf--;
		}
		outer[n] = now_ns() - before;
		dur[n++] = last_work_ns;
	}
	printf("done\n");
	fprintf(stderr, "probe_lat: durations_ns");
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %ld", dur[i]);
	fprintf(stderr, "\nprobe_lat: outer_ns");
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %ld", outer[i]);
	fprintf(stderr, "\n");
	free(dur);
	free(outer);
	return 0;
}
