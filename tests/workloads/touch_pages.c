/* touch_pages N: mmap N fresh anonymous pages and write one byte to each
 * (exactly N page faults from the loop), then exit. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: touch_pages N\n");
		return 2;
	}
	long n = atol(argv[1]);
	long page = sysconf(_SC_PAGESIZE);
	if (n <= 0)
		return 0;
	volatile char *p = mmap(NULL, (size_t)n * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	/* No transparent huge pages: one fault per 4K page. */
	madvise((void *)p, (size_t)n * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++)
		p[i * page] = 1;
	return 0;
}
