/* dwarf_sleeper: a_sleeps() sleeps 10 x usleep(50 ms) = 500 ms; b_waits() blocks 500 ms
 * in read() on a pipe that a thread writes after usleep(500 ms). Built with -O2
 * -fomit-frame-pointer: libc's usleep/clock_nanosleep and read keep no frame pointer,
 * so only DWARF unwinding names a_sleeps and b_waits as the blocked functions. */
#include <pthread.h>
#include <unistd.h>

static int fds[2];

__attribute__((noinline)) void a_sleeps(void)
{
	for (int i = 0; i < 10; i++)
		usleep(50000);
}

static void *writer(void *x)
{
	(void)x;
	usleep(500000);
	if (write(fds[1], "x", 1) != 1)
		return x;
	return 0;
}

__attribute__((noinline)) void b_waits(void)
{
	char c;
	pthread_t t;
	pthread_create(&t, 0, writer, 0);
	if (read(fds[0], &c, 1) != 1)
		c = 0;
	pthread_join(t, 0);
}

int main(void)
{
	if (pipe(fds) != 0)
		return 1;
	a_sleeps();
	b_waits();
	return 0;
}
