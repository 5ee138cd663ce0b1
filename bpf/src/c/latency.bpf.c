/* Call latency of one function: a uprobe at its entry and a uretprobe at its return,
 * paired per thread with a stack of the calls in progress (recursion pairs innermost
 * first, as hwprof's perf-event path pairs them). What it keeps:
 * - `counts`: calls (entries) and returns, every one, per-CPU;
 * - `hist`: the durations' log2 histogram in microseconds, slot = bit length of the
 *   duration in us (at least 1): bcc funclatency's and `hwprof probe --hist`'s buckets;
 * - `hdr_low` and `hdr`: the durations in HdrHistogram's buckets for 3 significant
 *   digits (2048 sub-buckets, unit 1 ns), slot = its counts index: user space rebuilds
 *   the same histogram, and so the same percentiles, it would get from every duration;
 * - `events`: the calls slower than threshold_ns, through a BPF ring buffer, with the
 *   function's address at entry and (with user_stacks) the user stack at its return (the
 *   entry's stack minus that address: the caller's return address, then its callers).
 *
 * Attached to the perf events of hwprof's uprobe definitions (PERF_EVENT_IOC_SET_BPF),
 * a program runs on each hit of the uprobe in the processes those events follow
 * (children and threads included) and returns 0: the events themselves write nothing.
 * A command is held before its exec; with its pid in `gate`, nothing counts until that
 * process execs (`latency_exec`), as perf's enable_on_exec starts its counts.
 *
 * Bounded: every map has max_entries; what did not fit is counted in `dropped`. */
#include "hwprof.h"
#include <asm/ptrace.h>

#define DROP_THREADS 0 /* a call whose thread found no room in `calls`: not timed */
#define DROP_EVENTS 1  /* a slow call the ring buffer had no room for */
#define DROP_DEPTH 2   /* a call nested more than 64 deep, or no room in `nested`: not timed */
#define DROP_HDR 3     /* a duration whose `hdr` slot found no room (in `hist` still) */

#define COUNT_CALLS 0
#define COUNT_RETURNS 1

/* Nested calls in progress kept per thread: the kernel returns from at most 64 calls
 * nested in a task (MAX_URETPROBE_DEPTH), the outermost in `calls` and 63 here. */
#define MAX_DEPTH 64 /* the array's size, a power of two */
#define MAX_NESTED 63

/* HdrHistogram with 3 significant digits and a lowest value of 1: 2048 sub-buckets
 * (the half: 1024, 2^10). */
#define HDR_HALF_SHIFT 10

volatile const __u64 threshold_ns = ~0ULL;
volatile const __u8 user_stacks = 0;

struct frame {
    __u64 ts;
    __u64 ip;
};

/* Calls nested under a thread's outermost call in progress (recursion). */
struct nested {
    __u32 depth;
    __u32 pad;
    struct frame f[MAX_DEPTH];
};

struct event {
    __u32 tgid;
    __u32 tid;
    __u64 ns;
    __u64 time; /* the return, CLOCK_MONOTONIC */
    __u64 ip;   /* the function, where it was entered */
    __s32 ustack;
    __u32 pad;
};

/* pid_tgid -> its outermost call in progress (deleted when it returns): the common
 * case costs one small hash entry per call, as bpftrace's @start[tid] does */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 10240);
    __type(key, __u64);
    __type(value, struct frame);
} calls SEC(".maps");

/* An empty `struct nested` (too big for the BPF stack), never written */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct nested);
} nested_zero SEC(".maps");

/* pid_tgid -> the calls in progress nested under it (deleted when none is) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u64);
    __type(value, struct nested);
} nested SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

/* slot (bit length of the duration in us, at least 1) -> calls */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 65);
    __type(key, __u32);
    __type(value, __u64);
} hist SEC(".maps");

/* HdrHistogram counts index -> calls: the indexes of durations under 2^36 ns (68.7 s)
 * in an array (no hashing on the common path), the longer ones in a hash */
#define HDR_ARRAY_SLOTS ((36 - HDR_HALF_SHIFT + 1) << HDR_HALF_SHIFT)
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, HDR_ARRAY_SLOTS);
    __type(key, __u32);
    __type(value, __u64);
} hdr_low SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u64);
} hdr SEC(".maps");

HWPROF_GATE(latency_exec)

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
        __sync_fetch_and_add(c, 1); /* per-CPU, atomic against preemption */
}


/* HdrHistogram's counts index of v (3 significant digits, unit 1). */
static __always_inline __u32 hdr_index(__u64 v)
{
    __u32 bucket = hwprof_log2(v | ((1ULL << (HDR_HALF_SHIFT + 1)) - 1)) - HDR_HALF_SHIFT;
    __u64 sub = v >> bucket;
    return ((bucket + 1) << HDR_HALF_SHIFT) + (__u32)(sub - (1ULL << HDR_HALF_SHIFT));
}

static __always_inline void record(__u64 ns)
{
    __u64 us = ns / 1000;
    __u32 slot = us ? hwprof_log2(us) + 1 : 1;
    __u64 *b = bpf_map_lookup_elem(&hist, &slot);
    if (b)
        __sync_fetch_and_add(b, 1);
    __u32 i = hdr_index(ns);
    __u64 *h;
    if (i < HDR_ARRAY_SLOTS) {
        h = bpf_map_lookup_elem(&hdr_low, &i);
        if (h)
            __sync_fetch_and_add(h, 1);
        return;
    }
    h = bpf_map_lookup_elem(&hdr, &i);
    if (!h) {
        __u64 one = 1;
        if (bpf_map_update_elem(&hdr, &i, &one, BPF_NOEXIST) == 0)
            return;
        h = bpf_map_lookup_elem(&hdr, &i); /* another CPU added it meanwhile */
        if (!h) {
            hwprof_drop(DROP_HDR);
            return;
        }
    }
    __sync_fetch_and_add(h, 1);
}

SEC("uprobe")
int latency_entry(struct pt_regs *ctx)
{
    if (!hwprof_armed())
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    count(COUNT_CALLS);
    struct frame f = {.ts = bpf_ktime_get_ns(), .ip = ctx->rip}; /* x86-64 uapi pt_regs */
    /* The outermost call: the thread has none in progress. */
    if (bpf_map_update_elem(&calls, &id, &f, BPF_NOEXIST) == 0)
        return 0;
    if (!bpf_map_lookup_elem(&calls, &id)) {
        hwprof_drop(DROP_THREADS); /* no room: not timed, its return unpaired */
        return 0;
    }
    /* A call nested in one in progress. */
    struct nested *n = bpf_map_lookup_elem(&nested, &id);
    if (!n) {
        __u32 k = 0;
        struct nested *zero = bpf_map_lookup_elem(&nested_zero, &k);
        if (!zero)
            return 0;
        bpf_map_update_elem(&nested, &id, zero, BPF_NOEXIST);
        n = bpf_map_lookup_elem(&nested, &id);
        if (!n) {
            hwprof_drop(DROP_DEPTH);
            return 0;
        }
    }
    __u32 d = n->depth;
    if (d >= MAX_NESTED) {
        /* The kernel sets no return probe on a call nested that deep (its
         * MAX_URETPROBE_DEPTH): not timed, and not pushed, so that the returns that do
         * come pair with their own calls. */
        hwprof_drop(DROP_DEPTH);
        return 0;
    }
    n->f[d & (MAX_DEPTH - 1)] = f;
    n->depth = d + 1;
    return 0;
}

SEC("uretprobe")
int latency_return(struct pt_regs *ctx)
{
    __u64 now = bpf_ktime_get_ns();
    if (!hwprof_armed())
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    count(COUNT_RETURNS);
    struct frame f;
    struct nested *n = bpf_map_lookup_elem(&nested, &id);
    if (n && n->depth > 0) {
        /* The innermost nested call returns. */
        __u32 d = n->depth - 1;
        n->depth = d;
        f = n->f[d & (MAX_DEPTH - 1)];
        if (d == 0)
            bpf_map_delete_elem(&nested, &id);
    } else {
        struct frame *o = bpf_map_lookup_elem(&calls, &id);
        if (!o)
            return 0; /* the call began before tracing did, or found no room */
        f = *o;
        bpf_map_delete_elem(&calls, &id);
    }
    __u64 ns = now - f.ts;
    record(ns);
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
    e->time = now;
    e->ip = f.ip;
    e->ustack = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : HWPROF_NO_STACK;
    e->pad = 0;
    bpf_ringbuf_submit(e, 0);
    return 0;
}

