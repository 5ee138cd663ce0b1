/* Call latency of one function: a uprobe at its entry and a uretprobe at its return,
 * paired per thread with a stack of the calls in progress (recursion pairs innermost
 * first, as hwprof's perf-event path pairs them). What it keeps:
 * - `counts`: calls (entries) and returns, every one, per-CPU;
 * - `hist`: the durations' log2 histogram in microseconds, slot = bit length of the
 *   duration in us (at least 1): bcc funclatency's and `hwprof probe --hist`'s buckets;
 * - `hdr`: the durations in HdrHistogram's buckets for 3 significant digits (2048
 *   sub-buckets, unit 1 ns), slot = its counts index: user space rebuilds the same
 *   histogram, and so the same percentiles, it would get from every duration;
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
#define DROP_DEPTH 2   /* a call nested deeper than MAX_DEPTH in its thread: not timed */
#define DROP_HDR 3     /* a duration whose `hdr` slot found no room (in `hist` still) */

#define COUNT_CALLS 0
#define COUNT_RETURNS 1

/* Calls in progress kept per thread (a power of two). */
#define MAX_DEPTH 16

/* HdrHistogram with 3 significant digits and a lowest value of 1: 2048 sub-buckets
 * (the half: 1024, 2^10). */
#define HDR_HALF_SHIFT 10

volatile const __u64 threshold_ns = ~0ULL;
volatile const __u8 user_stacks = 0;

struct frame {
    __u64 ts;
    __u64 ip;
};

struct thread_calls {
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

/* pid_tgid -> its calls in progress (deleted when none is) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 10240);
    __type(key, __u64);
    __type(value, struct thread_calls);
} calls SEC(".maps");

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

/* HdrHistogram counts index -> calls */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, __u64);
} hdr SEC(".maps");

/* 0: counting; else the pid of a held command whose exec starts it (set by user space
 * before the command goes on, cleared by latency_exec) */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} gate SEC(".maps");

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

static __always_inline int is_armed(void)
{
    __u32 k = 0;
    __u32 *g = bpf_map_lookup_elem(&gate, &k);
    return g && *g == 0;
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
    __u64 *h = bpf_map_lookup_elem(&hdr, &i);
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
    if (!is_armed())
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    count(COUNT_CALLS);
    struct thread_calls *c = bpf_map_lookup_elem(&calls, &id);
    if (!c) {
        struct thread_calls zero = {};
        bpf_map_update_elem(&calls, &id, &zero, BPF_NOEXIST);
        c = bpf_map_lookup_elem(&calls, &id);
        if (!c) {
            hwprof_drop(DROP_THREADS);
            return 0;
        }
    }
    __u32 d = c->depth;
    if (d < MAX_DEPTH) {
        struct frame *f = &c->f[d & (MAX_DEPTH - 1)];
        f->ip = ctx->rip; /* x86-64 (the uapi struct pt_regs) */
        f->ts = bpf_ktime_get_ns();
    } else {
        hwprof_drop(DROP_DEPTH);
    }
    c->depth = d + 1;
    return 0;
}

SEC("uretprobe")
int latency_return(struct pt_regs *ctx)
{
    __u64 now = bpf_ktime_get_ns();
    if (!is_armed())
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    count(COUNT_RETURNS);
    struct thread_calls *c = bpf_map_lookup_elem(&calls, &id);
    if (!c || c->depth == 0)
        return 0; /* the call began before tracing did, or found no room */
    __u32 d = c->depth - 1;
    c->depth = d;
    if (d >= MAX_DEPTH)
        return 0;
    struct frame *f = &c->f[d & (MAX_DEPTH - 1)];
    __u64 ns = now - f->ts;
    __u64 ip = f->ip;
    if (d == 0)
        bpf_map_delete_elem(&calls, &id);
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
    e->ip = ip;
    e->ustack = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : HWPROF_NO_STACK;
    e->pad = 0;
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* sched_process_exec: TP_PROTO(struct task_struct *p, pid_t old_pid, struct
 * linux_binprm *bprm), in the exec'ing task's context. */
SEC("raw_tracepoint/sched_process_exec")
int latency_exec(void *ctx)
{
    __u32 k = 0;
    __u32 *g = bpf_map_lookup_elem(&gate, &k);
    if (g && *g && *g == (__u32)(bpf_get_current_pid_tgid() >> 32))
        *g = 0;
    return 0;
}
