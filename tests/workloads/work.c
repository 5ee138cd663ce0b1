/* work K: a fixed amount of CPU work (K thousand rounds of a 1000-step LCG), single-threaded,
 * no output. Twice K is twice the work, so benchmarks can be made slower by a known factor. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned long rounds(unsigned long x, unsigned long k) {
    for (unsigned long i = 0; i < k * 1000; i++)
        for (int j = 0; j < 1000; j++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: work K\n");
        return 2;
    }
    unsigned long k = strtoul(argv[1], NULL, 10);
    /* The result decides the exit code, so the loop cannot be optimized away. */
    return rounds(1, k) == 42 ? 3 : 0;
}
