/* spin2 ITERS THREADS: THREADS busy threads of ITERS iterations each (inner() called from
 * outer(), both noinline, for callchains); prints its own wall time as "workload_us N". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static unsigned long n;
__attribute__((noinline)) static unsigned long inner(unsigned long x) {
    for (unsigned long i = 0; i < 1000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}
__attribute__((noinline)) static unsigned long outer(unsigned long x) {
    for (unsigned long i = 0; i < n / 1000; i++)
        x = inner(x);
    return x;
}
static void *worker(void *arg) { *(unsigned long *)arg = outer(*(unsigned long *)arg); return NULL; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
int main(int argc, char **argv) {
    n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000000000UL;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    double t0 = now();
    pthread_t t[64]; unsigned long v[64];
    for (int i = 0; i < threads && i < 64; i++) { v[i] = i + 1; pthread_create(&t[i], 0, worker, &v[i]); }
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], 0);
    printf("workload_us %.0f\n", now() - t0);
    return 0;
}
