/* dwarf_signal: a SIGALRM handler that spins (in_handler), interrupting a loop
 * (interrupted) every 5 ms; about 20% of the time is in the handler. Stacks of handler
 * samples go in_handler <- handler <- __restore_rt <- interrupted <- main: unwinding
 * must step through the kernel's signal frame. Built with -O2 -fomit-frame-pointer. */
#include <signal.h>
#include <sys/time.h>

volatile unsigned long sink;
volatile int ticks;

__attribute__((noinline)) void in_handler(void)
{
	for (long i = 0; i < 3000000; i++)
		sink += i;
}

static void handler(int sig)
{
	(void)sig;
	in_handler();
	ticks++;
}

__attribute__((noinline)) void interrupted(void)
{
	while (ticks < 100)
		sink++;
	/* No handler after this: one pending or due while exit() runs (under load) would
	 * be sampled with a stack that does not go through this loop. */
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, 0);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, 0);
}

int main(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
	setitimer(ITIMER_REAL, &it, 0);
	interrupted();
	return 0;
}
