/* memshare: functions and globals for the synthetic memory-access recordings of
 * tests/mem.rs and tests/c2c.rs (tests/memdata/mod.rs writes PEBS load/store samples
 * whose ips are in these functions and whose data addresses are in these globals; the
 * binary is never run by those tests, only read for symbols).
 *
 * `shared` is one 64-byte cache line that writer_a (offset 0) and writer_b (offset 8)
 * both write: false sharing. `quiet` is another line with little traffic, `table` a
 * large array that scan reads. All are initialized so they sit in .data, inside the
 * file-backed mapping of the binary. */
#include <pthread.h>
#include <stdio.h>

long shared[8] __attribute__((aligned(64))) = {1};
long quiet[8] __attribute__((aligned(64))) = {2};
long table[4096] __attribute__((aligned(64))) = {3};

__attribute__((noinline)) void writer_a(long n) {
    for (long i = 0; i < n; i++)
        __atomic_fetch_add(&shared[0], 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void writer_b(long n) {
    for (long i = 0; i < n; i++)
        __atomic_fetch_add(&shared[1], 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) long scan(long n) {
    long s = 0;
    for (long i = 0; i < n; i++)
        s += table[(i * 67) % 4096] + quiet[i % 8];
    return s;
}

static void *thread_b(void *arg) {
    writer_b((long)arg);
    return NULL;
}

int main(int argc, char **argv) {
    (void)argv;
    long n = 1000000L * argc;
    pthread_t t;
    pthread_create(&t, NULL, thread_b, (void *)n);
    writer_a(n);
    pthread_join(t, NULL);
    printf("%ld %ld %ld\n", shared[0], shared[1], scan(n));
    return 0;
}
