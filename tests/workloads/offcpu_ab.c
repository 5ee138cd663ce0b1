/* offcpu_ab: known off-CPU time under two functions, for `hwprof offcpu` tests.
 * a_sleeps: 10 x nanosleep(50 ms) = 500 ms.
 * b_waits: 5 x read() on a pipe that the thread `ab_writer` (named "ab_writer") writes
 * 100 ms after b_waits asks (through a second pipe) = 500 ms.
 * Both are noinline and called from main. The program times both calls, and main from
 * its start to its return (CLOCK_MONOTONIC), and prints them to stderr at the end:
 * "offcpu_ab: a_sleeps_us A b_waits_us B main_us M" (a loaded machine stretches every
 * wait by the time the thread waits for a CPU after waking: off-CPU time too). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int ask[2], answer[2];

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The libc wrappers keep no frame pointer, so with -g (fp) their caller's frame is the
 * one the kernel's unwinder skips: these noinline helpers take that place and keep
 * a_sleeps / b_waits / ab_writer on the stacks. */
__attribute__((noinline)) void nap(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) ssize_t pipe_read(int fd, char *c)
{
	ssize_t n = read(fd, c, 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return n;
}

__attribute__((noinline)) void *ab_writer(void *arg)
{
	char c;
	(void)arg;
	/* Named by itself before its first wait, so that every switch-out of this thread
	 * carries the name (a rename from main could come after it blocks). */
	pthread_setname_np(pthread_self(), "ab_writer");
	while (pipe_read(ask[0], &c) == 1) {
		nap(100);
		if (write(answer[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

__attribute__((noinline)) void a_sleeps(void)
{
	for (int i = 0; i < 10; i++)
		nap(50);
}

__attribute__((noinline)) void b_waits(void)
{
	char c = 'x';
	for (int i = 0; i < 5; i++) {
		if (write(ask[1], &c, 1) != 1 || pipe_read(answer[0], &c) != 1) {
			perror("pipe");
			return;
		}
	}
}

int main(void)
{
	long t0 = now_ns();
	pthread_t t;
	if (pipe(ask) || pipe(answer) || pthread_create(&t, NULL, ab_writer, NULL)) {
		perror("setup");
		return 1;
	}
	long ta = now_ns();
	a_sleeps();
	long tb = now_ns();
	b_waits();
	long tc = now_ns();
	close(ask[1]);
	pthread_join(t, NULL);
	fprintf(stderr, "offcpu_ab: a_sleeps_us %ld b_waits_us %ld main_us %ld\n",
		(tb - ta) / 1000, (tc - tb) / 1000, (now_ns() - t0) / 1000);
	return 0;
}
