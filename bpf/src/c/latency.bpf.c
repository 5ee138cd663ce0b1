/* Call latency of one function: a uprobe at its entry and a uretprobe at its return,
 * paired per thread. Counts calls and returns (per-CPU), sums a log2 histogram of the
 * latencies in ns, and sends the calls slower than threshold_ns through a BPF ring
 * buffer with their user stacks. The engine's tests use it; it is the shape of
 * `probe` on the engine.
 *
 * Bounded: `entry` (calls in progress) has max_entries; what did not fit is counted in
 * `dropped` (slots below). */
#include "hwprof.h"

#define DROP_ENTRIES 0 /* a call in progress that did not fit `entry`: not timed */
#define DROP_EVENTS 1  /* a slow call the ring buffer had no room for */

#define COUNT_CALLS 0
#define COUNT_RETURNS 1

volatile const __u64 threshold_ns = ~0ULL;

struct event {
    __u32 tgid;
    __u32 tid;
    __u64 ns;
    __s32 ustack;
    __u32 pad;
};

/* pid_tgid -> entry time */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 10240);
    __type(key, __u64);
    __type(value, __u64);
} entry SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

/* slot hwprof_log2(ns) -> calls */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u64);
} hist SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 1024);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline void count(__u32 slot)
{
    __u64 *c = bpf_map_lookup_elem(&counts, &slot);
    if (c)
        *c += 1; /* per-CPU: no other writer */
}

SEC("uprobe")
int latency_entry(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u64 ts = bpf_ktime_get_ns();
    count(COUNT_CALLS);
    if (bpf_map_update_elem(&entry, &id, &ts, BPF_ANY) != 0)
        hwprof_drop(DROP_ENTRIES);
    return 0;
}

SEC("uretprobe")
int latency_return(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u64 *tsp = bpf_map_lookup_elem(&entry, &id);
    if (!tsp)
        return 0;
    __u64 ns = bpf_ktime_get_ns() - *tsp;
    bpf_map_delete_elem(&entry, &id);
    count(COUNT_RETURNS);
    __u32 slot = hwprof_log2(ns);
    __u64 *b = bpf_map_lookup_elem(&hist, &slot);
    if (b)
        __sync_fetch_and_add(b, 1);
    if (ns < threshold_ns)
        return 0;
    struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        hwprof_drop(DROP_EVENTS);
        return 0;
    }
    e->tgid = id >> 32;
    e->tid = (__u32)id;
    e->ns = ns;
    e->ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
    e->pad = 0;
    bpf_ringbuf_submit(e, 0);
    return 0;
}
