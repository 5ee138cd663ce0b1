// tour.c: a small program to try hwprof on (the README's tour).
// Build it with frame pointers, so that `record -g` sees whole stacks:
//   cc -O2 -g -fno-omit-frame-pointer -o tour examples/tour.c
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// On CPU: n steps, counting the bytes of a made-up request.
__attribute__((noinline)) unsigned long parse(unsigned long n) {
    unsigned char seen[256] = {0};
    unsigned long h = 5381;
    for (unsigned long i = 0; i < n; i++) seen[(h = h * 33 + (i & 0xff)) & 0xff]++;
    return h + seen[7];
}
// Inlined into checksum: flame graphs show it as `mix_[i]`.
static inline __attribute__((always_inline)) unsigned long mix(unsigned long s, unsigned long i) {
    return (s ^ (i * i)) + (s >> 3);
}
// On CPU: 2n steps over 4 lanes.
__attribute__((noinline)) unsigned long checksum(unsigned long n) {
    volatile unsigned long lane[4] = {1, 2, 3, 4};
    for (unsigned long i = 0; i < 2 * n; i++) lane[i & 3] = mix(lane[i & 3], i);
    return lane[0] + lane[1] + lane[2] + lane[3];
}
// Off CPU: asleep for 2 ms, as if waiting for a disk.
__attribute__((noinline)) void wait_io(void) {
    struct timespec t = {0, 2000000};
    nanosleep(&t, NULL);
}
__attribute__((noinline)) unsigned long handle(int i) {
    unsigned long n = 20000 + (i * 7919UL) % 200000; // request sizes vary: 20k..220k
    return parse(n) + checksum(n);
}
int main(int argc, char **argv) {
    int requests = argc > 1 ? atoi(argv[1]) : 2000;
    unsigned long sum = 0;
    for (int i = 0; i < requests; i++) {
        sum += handle(i);
        if (i % 20 == 0) wait_io();
    }
    printf("tour: %d requests, checksum %lu\n", requests, sum & 0xffff);
    return 0;
}
