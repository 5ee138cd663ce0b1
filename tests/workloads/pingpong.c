/* pingpong N: a parent and its child bounce one byte over two pipes N times: 2N context
 * switches, every one a block in read() (the off-CPU tracing benchmark's workload, and
 * a known answer for offcpu: both processes wait in pong_wait). Built with frame
 * pointers. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static void pong_wait(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1)
		exit(1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void bounce(int in, int out, long n, int first)
{
	char c = 'x';
	for (long i = 0; i < n; i++) {
		if (!first)
			pong_wait(in);
		if (write(out, &c, 1) != 1)
			exit(1);
		if (first)
			pong_wait(in);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int a[2], b[2];
	if (pipe(a) != 0 || pipe(b) != 0) {
		perror("pipe");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		bounce(a[0], b[1], n, 0);
		return 0;
	}
	bounce(b[0], a[1], n, 1);
	int st;
	waitpid(child, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
