/* two_hot MS [A B]: burns MS milliseconds of CPU time in two hot functions, hot_a and
 * hot_b (both noinline, called from main), doing A units of work in hot_a for every B
 * units in hot_b (default 2 1), so hot_a carries A/(A+B) of the CPU time. Prints
 * "rounds N X". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 20000UL /* iterations of one unit of work (~20-40 us) */

/* Taking the frame address makes gcc set up a frame in these leaf functions, so that
 * frame-pointer callchains show main as their caller. */
void *volatile frame_sink;

__attribute__((noinline)) unsigned long hot_a(unsigned long x, unsigned long units) {
    frame_sink = __builtin_frame_address(0);
    for (unsigned long i = 0; i < units * UNIT; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

__attribute__((noinline)) unsigned long hot_b(unsigned long x, unsigned long units) {
    frame_sink = __builtin_frame_address(0);
    for (unsigned long i = 0; i < units * UNIT; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 400;
    unsigned long a = argc > 2 ? strtoul(argv[2], 0, 10) : 2;
    unsigned long b = argc > 3 ? strtoul(argv[3], 0, 10) : 1;
    unsigned long x = 1, rounds = 0;
    double end = cpu_ms() + ms;
    /* Rounds of about a millisecond or more, so that reading the clock costs little. */
    unsigned long scale = 1;
    while (scale * (a + b) < 40)
        scale++;
    do {
        x = hot_a(x, a * scale);
        x = hot_b(x, b * scale);
        rounds++;
    } while (cpu_ms() < end);
    printf("rounds %lu %lu\n", rounds, x & 1);
    return 0;
}
