/* forker: calls target() in every kind of task a program makes, for uprobe inheritance.
 *   forker [CODE]     target() once in the parent, twice in a fork()ed child (waited for),
 *                     once in a pthread (joined), once in a forked child that exec()s this
 *                     binary again ("forker exec"); prints "forker: ok 5 calls" and exits
 *                     CODE (default 0). Any failure (fork, pthread_create, exec, a child
 *                     that fails) is printed with its errno text and exits 1.
 *   forker exec       target() once, exit 0 (the exec'd child).
 *   forker hold       prints "ready", then target() every 10 ms forever (forking a child
 *                     that calls it too every 10 calls), for tests that kill hwprof. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Calls made in this program (the parent and its children: 1 + 2 + 1 + 1). */
#define CALLS 5

volatile int sink;

__attribute__((noinline)) void target(int x)
{
	sink += x;
	asm volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	(void)arg;
	target(3);
	return NULL;
}

/* Waits for `pid`; 0 when it exited 0, else prints why and returns -1. */
static int reap(pid_t pid, const char *what)
{
	int st;
	pid_t r;
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r != pid) {
		fprintf(stderr, "forker: waitpid (%s): %s\n", what, strerror(errno));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "forker: the %s child failed (status %#x)\n", what, st);
		return -1;
	}
	return 0;
}

static int hold(void)
{
	struct timespec ten_ms = {0, 10 * 1000 * 1000};
	printf("ready\n");
	fflush(stdout);
	for (int i = 0;; i++) {
		target(1);
		if (i % 10 == 0) {
			pid_t p = fork();
			if (p < 0) {
				perror("fork");
				return 1;
			}
			if (p == 0) {
				target(2);
				_exit(0);
			}
			if (reap(p, "hold") < 0)
				return 1;
		}
		nanosleep(&ten_ms, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		target(5);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "hold") == 0)
		return hold();
	int code = argc > 1 ? atoi(argv[1]) : 0;

	target(0);

	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		return 1;
	}
	if (p == 0) {
		target(1);
		target(2);
		_exit(0);
	}
	if (reap(p, "forked") < 0)
		return 1;

	pthread_t t;
	int e = pthread_create(&t, NULL, thread_main, NULL);
	if (e != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		return 1;
	}
	pthread_join(t, NULL);

	p = fork();
	if (p < 0) {
		perror("fork");
		return 1;
	}
	if (p == 0) {
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		perror("exec");
		_exit(127);
	}
	if (reap(p, "exec'd") < 0)
		return 1;

	printf("forker: ok %d calls\n", CALLS);
	fflush(stdout);
	return code;
}
