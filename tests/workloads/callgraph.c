/* callgraph MS: main -> via_a -> leaf and main -> via_b -> leaf for MS milliseconds of CPU time
 * (default 400), via_a asking leaf for twice via_b's work: a call graph of known shape, leaf's
 * time 2/3 under via_a and 1/3 under via_b (tests/report_callgraph.rs). leaf's two loops are
 * one source line each: HOT carries most of leaf's samples, WARM some (hwprof
 * annotate). Prints "rounds N X". (Names of one letter would be demangled as C++ types,
 * `a` as `signed char`, by the symbolizer.) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 20000UL

/* Taking the frame address gives these functions a frame, so that frame-pointer
 * callchains name every caller. */
void *volatile frame_sink;

__attribute__((noinline)) unsigned long leaf(unsigned long x, unsigned long n) {
    frame_sink = __builtin_frame_address(0);
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; /* HOT */
    for (unsigned long i = 0; i < n / 8; i++) x = (x ^ (x >> 7)) * 2654435761UL; /* WARM */
    return x;
}

/* The + 1 keeps the calls from becoming tail calls (a jump leaves no frame). */
__attribute__((noinline)) unsigned long via_a(unsigned long x, unsigned long n) {
    frame_sink = __builtin_frame_address(0);
    return leaf(x, 2 * n) + 1;
}

__attribute__((noinline)) unsigned long via_b(unsigned long x, unsigned long n) {
    frame_sink = __builtin_frame_address(0);
    return leaf(x, n) + 1;
}

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 400;
    /* Each pair of calls does its own amount of work (UNIT/2 to 3*UNIT/2 for via_b, twice
     * that for via_a, from a fixed xorshift sequence): with one length the loop's period and
     * the sampling timer's kept step, and the samples fell on one phase of it for a whole
     * run (via_a 53% and via_b 45% on a loaded machine). */
    unsigned long x = 1, rounds = 0, r = 88172645463325252UL;
    double end = cpu_ms() + ms;
    do {
        for (int i = 0; i < 20; i++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            unsigned long n = UNIT / 2 + r % UNIT;
            x = via_b(via_a(x, n), n);
        }
        rounds++;
    } while (cpu_ms() < end);
    printf("rounds %lu %lu\n", rounds, x & 1);
    return 0;
}
