// The C++ twin of alloc_known.c (tests/memory_allocs.rs): new[] and std::vector over
// operator new, which libstdc++ (no frame pointers) implements over malloc.
#include <vector>
#include <csignal>
#include <cstring>
static char *kept[3];
__attribute__((noinline)) void leak_here() {
    for (int i = 0; i < 3; i++) { kept[i] = new char[1 << 20]; std::memset(kept[i], 1, 4096); }
}
__attribute__((noinline)) void churn() {
    for (int i = 0; i < 1000; i++) { std::vector<char> v(65536); v[0] = 1; asm volatile("" ::"r"(v.data()) : "memory"); }
}
__attribute__((noinline)) void grow() {
    std::vector<char> b;
    for (int i = 1; i <= 16; i++) b.resize((size_t)i * 4096);
}
int main(int argc, char **) {
    if (argc > 1) std::raise(SIGSTOP);
    leak_here(); churn(); grow();
    return 0;
}
