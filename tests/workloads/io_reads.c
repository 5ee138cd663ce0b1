/* io_reads ZERO [wait]: known I/O for `hwprof io`.
 *   slow_reads(): 5 read()s of 1 byte on a pipe a child process writes every 100 ms
 *                 (about 500 ms waiting in read);
 *   fast_reads(): 256 read()s of 4096 bytes of ZERO (a private character device 1,5 the
 *                 test makes; opened before slow_reads, closed after fast_reads).
 * With "wait": prints "ready" and stops itself (SIGSTOP) before any of it, for a tracer
 * to attach; SIGCONT goes on. Prints on stderr
 *   io_reads: pipe_ino N slow_us U slow_bytes B fast_bytes F */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

__attribute__((noinline)) long slow_reads(int fd)
{
	long n = 0;
	for (int i = 0; i < 5; i++) {
		char c;
		ssize_t r = read(fd, &c, 1);
		if (r > 0)
			n += r;
	}
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) long fast_reads(int fd)
{
	static char buf[4096];
	long n = 0;
	for (int i = 0; i < 256; i++) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r > 0)
			n += r;
	}
	__asm__ volatile("" ::: "memory");
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: io_reads ZERO [wait]\n");
		return 2;
	}
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		raise(SIGSTOP);
	}
	int p[2];
	if (pipe(p) != 0)
		return 1;
	pid_t child = fork();
	if (child == 0) {
		close(p[0]);
		for (int i = 0; i < 5; i++) {
			usleep(100000);
			if (write(p[1], "x", 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	int z = open(argv[1], O_RDONLY);
	if (z < 0) {
		perror("open");
		return 1;
	}
	struct stat st;
	fstat(p[0], &st);
	long long t0 = now_us();
	long slow = slow_reads(p[0]);
	long long t1 = now_us();
	long fast = fast_reads(z);
	close(z);
	waitpid(child, NULL, 0);
	fprintf(stderr, "io_reads: pipe_ino %lu slow_us %lld slow_bytes %ld fast_bytes %ld\n",
	        (unsigned long)st.st_ino, t1 - t0, slow, fast);
	return 0;
}
