/* Allocations with known answers (tests/memory_allocs.rs):
 *   leak_here()  keeps 3 blocks of 1 MiB          3,145,728 bytes, still allocated at exit
 *   churn()      1000 x malloc(64 KiB) + free     65,536,000 bytes, none left
 *   grow()       16 reallocs to 4 KiB .. 64 KiB   557,056 bytes asked (4096 x 136), freed
 * Modes:
 *   (none)       the three, then exit
 *   stop         stops itself (SIGSTOP) first: resumed by SIGCONT once hwprof -p attached
 *   family       leak_here() in a thread, churn() in a forked child, then exec of itself
 *                as `grown`, which runs grow(): the answers are the same; prints a
 *                checksum of what it computed, the same traced or not
 *   grown        grow() only (what `family` execs)
 *   hold         the three, then prints "ready" and waits for a signal */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept[3];
static unsigned long sum;

/* Keeps the compiler from eliding a malloc/free pair whose memory it can see through. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) void leak_here(void)
{
    for (int i = 0; i < 3; i++) {
        kept[i] = malloc(1 << 20);
        memset(kept[i], i + 1, 4096);
        sum += ((unsigned char *)kept[i])[4095];
    }
}

__attribute__((noinline)) void churn(void)
{
    for (int i = 0; i < 1000; i++) {
        unsigned char *p = malloc(65536);
        p[0] = (unsigned char)i;
        p[65535] = 1;
        ESCAPE(p);
        sum += p[0] + p[65535];
        free(p);
    }
}

__attribute__((noinline)) void grow(void)
{
    unsigned char *b = NULL;
    for (int i = 1; i <= 16; i++) {
        b = realloc(b, (size_t)i * 4096);
        b[(size_t)i * 4096 - 1] = (unsigned char)i;
        ESCAPE(b);
        sum += b[(size_t)i * 4096 - 1];
    }
    free(b);
}

static void *thread_main(void *arg)
{
    (void)arg;
    leak_here();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "grown")) {
        grow();
        printf("grown %lu\n", sum);
        return 0;
    }
    if (!strcmp(mode, "family")) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, NULL) || pthread_join(t, NULL))
            return 1;
        pid_t child = fork();
        if (child == 0) {
            churn();
            printf("child %lu\n", sum);
            fflush(stdout);
            _exit(0);
        }
        int st = 0;
        if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
        printf("parent %lu\n", sum);
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "grown", (char *)NULL);
        return 1;
    }
    if (!strcmp(mode, "stop"))
        raise(SIGSTOP);
    leak_here();
    churn();
    grow();
    printf("sum %lu\n", sum);
    if (!strcmp(mode, "hold")) {
        printf("ready\n");
        fflush(stdout);
        pause();
    }
    return 0;
}
