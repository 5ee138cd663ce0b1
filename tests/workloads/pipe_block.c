/* pipe_block: blocks on a pipe read that never returns (for `offcpu -p` on a thread
 * waiting for the whole window). Prints "ready" on stdout just before the read; the
 * write end stays open in this process, so the read waits until the process is killed. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) ssize_t pipe_wait(int fd)
{
	char c;
	ssize_t n = read(fd, &c, 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return n;
}

int main(void)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("pipe");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	return pipe_wait(fds[0]) == 1 ? 0 : 1;
}
