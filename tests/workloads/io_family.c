/* io_family ZERO: reads of ZERO (a private character device 1,5 the test makes) of
 * 4096 bytes each, through a thread, a forked child and an exec, for `hwprof io`:
 *   in_thread():  64 reads, in a second thread
 *   in_child():   32 reads, in a forked child
 *   after_exec(): 16 reads, in the program exec'd as `io_family ZERO exec`
 * 112 reads in all (458,752 bytes); each opens ZERO itself. Prints what it read, the
 * same traced or not. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *zero;

static long reads(int n)
{
	static __thread char buf[4096];
	int fd = open(zero, O_RDONLY);
	if (fd < 0)
		return -1;
	long got = 0;
	for (int i = 0; i < n; i++) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r > 0)
			got += r;
	}
	close(fd);
	return got;
}

__attribute__((noinline)) long in_thread(void) { return reads(64); }
__attribute__((noinline)) long in_child(void) { return reads(32); }
__attribute__((noinline)) long after_exec(void) { return reads(16); }

static void *thread_main(void *arg)
{
	*(long *)arg = in_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	zero = argv[1];
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		printf("exec %ld\n", after_exec());
		return 0;
	}
	long t = 0;
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, &t) || pthread_join(th, NULL))
		return 1;
	printf("thread %ld\n", t);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("child %ld\n", in_child());
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	execl("/proc/self/exe", argv[0], zero, "exec", (char *)NULL);
	return 1;
}
