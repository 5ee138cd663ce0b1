/* libc_calls N: calls libc's getppid() N times (a libc function few other programs
 * call, for uprobes named by library: uprobe:libc:getppid).
 * libc_calls loop: prints "ready", then calls it once every millisecond forever. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	volatile long sink = 0;
	if (argc > 1 && strcmp(argv[1], "loop") == 0) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000L };
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			sink += getppid();
			nanosleep(&ts, NULL);
		}
	}
	long n = argc > 1 ? atol(argv[1]) : 1000;
	for (long i = 0; i < n; i++)
		sink += getppid();
	return 0;
}
