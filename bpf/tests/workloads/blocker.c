#define _GNU_SOURCE /* reallocarray, valloc */
/* Blocks for known times in a known function, for the BPF engine's tests (x86-64).
 *
 * The blocking system calls are made with inline `syscall` instructions inside
 * sleeper_fn and target_fn, so that a frame-pointer walk of the user stack starts in
 * them (a libc wrapper without a frame pointer would hide its caller).
 *
 *   blocker sleep MS COUNT [MS COUNT...]  after a line on stdin, sleeper_fn(MS) COUNT
 *                                         times per pair; prints "measured NS" (the
 *                                         CLOCK_MONOTONIC time inside sleeper_fn)
 *   blocker fork MS COUNT                 after a line on stdin, a child process does
 *                                         "sleep MS COUNT" (prints "child PID" and its
 *                                         "measured NS"); the parent waits for it
 *   blocker ready MS                      after a line on stdin, prints "ready", then
 *                                         sleeper_fn(MS)
 *   blocker early MS                      prints "ready", then sleeper_fn(MS), at once
 *   blocker calls N SLOW MS               after a line on stdin, target_fn(0) N times
 *                                         and target_fn(MS) SLOW times
 *   blocker alloc N SIZE KEEP             after a line on stdin, alloc_fn(SIZE) N times
 *                                         (malloc), frees all but the first KEEP, then
 *                                         realloc_fn() (malloc(100) grown by realloc to
 *                                         200000), calloc_fn() (calloc(10, 30)) and
 *                                         aligned_fn() (posix_memalign, valloc,
 *                                         reallocarray), keeps those; prints "done"
 *   blocker io N SIZE                     after a line on stdin, io_fn() N times: writes
 *                                         SIZE bytes into a pipe and reads them back
 *                                         (inline syscalls); prints "done"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static inline long raw_syscall3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Writes n bytes of buf into fds[1] and reads them back from fds[0]: 1 (write) then 0
 * (read), x86-64's numbers. */
__attribute__((noinline)) long io_fn(int *fds, char *buf, long n)
{
    long w = raw_syscall3(1, fds[1], (long)buf, n);
    long r = raw_syscall3(0, fds[0], (long)buf, n);
    __asm__ volatile("" ::: "memory");
    return w + r;
}

#define MAX_BLOCKS 100000
static void *blocks[MAX_BLOCKS];

__attribute__((noinline)) void *alloc_fn(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *realloc_fn(void)
{
    void *p = malloc(100);
    p = realloc(p, 200000);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *calloc_fn(void)
{
    void *p = calloc(10, 30);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* posix_memalign(64, 1000), valloc(5000) and reallocarray(NULL, 10, 100), kept: 7000
 * bytes in 3 blocks. */
__attribute__((noinline)) int aligned_fn(void)
{
    void *a = NULL, *b = valloc(5000), *c = reallocarray(NULL, 10, 100);
    int e = posix_memalign(&a, 64, 1000);
    __asm__ volatile("" ::: "memory");
    return e == 0 && a && b && c;
}

static inline long raw_nanosleep(const struct timespec *ts)
{
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(35L /* SYS_nanosleep */), "D"(ts), "S"(0L)
                     : "rcx", "r11", "memory");
    return ret;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) long long sleeper_fn(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    long long t0 = now_ns();
    raw_nanosleep(&ts);
    long long t1 = now_ns();
    __asm__ volatile("" ::: "memory");
    return t1 - t0;
}

__attribute__((noinline)) long target_fn(long ms)
{
    if (ms > 0) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        raw_nanosleep(&ts);
    }
    __asm__ volatile("" ::: "memory");
    return ms;
}

static void wait_go(void)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        exit(3);
}

static long long run_sleeps(int argc, char **argv)
{
    long long total = 0;
    for (int i = 0; i + 1 < argc; i += 2) {
        long ms = atol(argv[i]), count = atol(argv[i + 1]);
        for (long c = 0; c < count; c++)
            total += sleeper_fn(ms);
    }
    return total;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "sleep")) {
        wait_go();
        printf("measured %lld\n", run_sleeps(argc - 2, argv + 2));
        return 0;
    }
    if (!strcmp(argv[1], "fork") && argc == 4) {
        wait_go();
        pid_t p = fork();
        if (p == 0) {
            printf("child %d\n", (int)getpid());
            printf("measured %lld\n", run_sleeps(2, argv + 2));
            _exit(0);
        }
        int st;
        waitpid(p, &st, 0);
        return 0;
    }
    if (!strcmp(argv[1], "ready") && argc == 3) {
        wait_go();
        printf("ready\n");
        sleeper_fn(atol(argv[2]));
        return 0;
    }
    if (!strcmp(argv[1], "early") && argc == 2) {
        /* Blocked in a read of stdin until the test says go: a wait already in
         * progress when the window opens, however long loading the program takes. */
        printf("ready\n");
        wait_go();
        return 0;
    }
    if (!strcmp(argv[1], "alloc") && argc == 5) {
        wait_go();
        long n = atol(argv[2]), size = atol(argv[3]), keep = atol(argv[4]);
        if (n > MAX_BLOCKS)
            return 2;
        for (long i = 0; i < n; i++)
            blocks[i] = alloc_fn((size_t)size);
        for (long i = keep; i < n; i++)
            free(blocks[i]);
        void *r = realloc_fn(), *c = calloc_fn();
        int aligned = aligned_fn();
        printf("done %d\n", r != NULL && c != NULL && aligned);
        return 0;
    }
    if (!strcmp(argv[1], "io") && argc == 4) {
        int fds[2];
        static char buf[65536];
        long n = atol(argv[2]), size = atol(argv[3]), total = 0;
        if (size > (long)sizeof(buf) || pipe(fds) != 0)
            return 2;
        wait_go();
        for (long i = 0; i < n; i++)
            total += io_fn(fds, buf, size);
        printf("done %ld\n", total);
        return 0;
    }
    if (!strcmp(argv[1], "calls") && argc == 5) {
        wait_go();
        long n = atol(argv[2]), slow = atol(argv[3]), ms = atol(argv[4]), sum = 0;
        for (long i = 0; i < n; i++)
            sum += target_fn(0);
        for (long i = 0; i < slow; i++)
            sum += target_fn(ms);
        printf("done %ld\n", sum);
        return 0;
    }
    return 2;
}
