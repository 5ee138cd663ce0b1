/* cpu_split USER_MS SYS_MS FILE: about USER_MS ms of user CPU time (arithmetic), then
 * about SYS_MS ms of system CPU time (mapping, zero-filling and unmapping anonymous
 * memory: nearly all of it in the kernel), then appends its own rusage as
 * "USER_US SYS_US\n" to FILE, so a test can compare what a tool reports with what the
 * process measured of itself. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static long us(struct timeval t)
{
	return t.tv_sec * 1000000L + t.tv_usec;
}

static struct rusage self(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cpu_split USER_MS SYS_MS FILE\n");
		return 2;
	}
	long user_us = atol(argv[1]) * 1000, sys_us = atol(argv[2]) * 1000;
	volatile unsigned long x = 1;
	while (us(self().ru_utime) < user_us)
		for (int i = 0; i < 1000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	size_t len = 64 * 4096;
	while (us(self().ru_stime) < sys_us)
		for (int i = 0; i < 20; i++) {
			void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			munmap(p, len);
		}
	struct rusage r = self();
	char line[64];
	int n = snprintf(line, sizeof line, "%ld %ld\n", us(r.ru_utime), us(r.ru_stime));
	int fd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, n) != n) {
		perror(argv[3]);
		return 1;
	}
	close(fd);
	return 0;
}
