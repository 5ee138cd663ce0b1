/* threads T N: start T pthreads, each touching N fresh pages (N page faults
 * each), and join them. The main thread touches none itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static long pages;

static void *worker(void *arg)
{
	(void)arg;
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)pages * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise((void *)p, (size_t)pages * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * page] = 1;
	munmap((void *)p, (size_t)pages * page);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: threads T N\n");
		return 2;
	}
	int t = atoi(argv[1]);
	pages = atol(argv[2]);
	pthread_t *tids = calloc((size_t)t, sizeof(*tids));
	for (int i = 0; i < t; i++) {
		if (pthread_create(&tids[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < t; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}
