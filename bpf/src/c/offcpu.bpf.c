/* Off-CPU time summed in the kernel: per (tgid, tid, user stack, kernel stack, kind),
 * the nanoseconds target threads spent switched out and how many blocks that was.
 *
 * A block runs from a thread's switch-out (sched_switch with it as prev; its stacks
 * taken then, in its context) to its next switch-in (sched_switch with it as next).
 * Every switch-out counts, preempted or blocked, as hwprof's perf-event path and
 * perf's/bcc's offcputime do; a thread's last switch-out (prev_state X or Z: it exited)
 * is its end, not a block. The idle tasks (pid 0) never block.
 *
 * The window (config.window_start, set by user space) cuts the blocks that began
 * before it: only their time after it counts (kind BEFORE_WINDOW). Threads present
 * when it opened (the `present` map, filled by user space from /proc) whose first
 * event is a switch-in without a recorded switch-out were off CPU since before it:
 * (switch-in - window start), no stacks. Blocks still in progress when tracing stops
 * are left in `start`, which user space reads after detaching.
 *
 * Bounded: every map has max_entries (set by user space at load); what did not fit is
 * counted in `dropped` (slots below). */
#include "hwprof.h"

#define KIND_ENDED 0
#define KIND_BEFORE_WINDOW 1

#define DROP_BLOCKS 0   /* a (thread, stacks) sum that did not fit `blocks` */
#define DROP_STARTS 1   /* a switch-out that did not fit `start`: that block is lost */
#define DROP_THREADS 2  /* a thread's comm that did not fit `threads` */
#define DROP_TARGETS 3  /* a forked child that did not fit `targets` (not followed) */

/* sched_switch's arguments: /sys/kernel/tracing/events/sched/sched_switch/format,
 * unchanged since 4.x. */
struct sched_switch_args {
    __u64 common;
    __u64 prev_comm[2]; /* char[16], read as two words: the verifier refuses byte
                           copies through a pointer into the context */
    __s32 prev_pid;
    __s32 prev_prio;
    __s64 prev_state;
    __u64 next_comm[2]; /* char[16] */
    __s32 next_pid;
    __s32 next_prio;
};

/* task_newtask's arguments (events/task/task_newtask/format). */
struct task_newtask_args {
    __u64 common;
    __s32 pid;
    char comm[16];
    __u64 clone_flags;
};

#define CLONE_THREAD 0x00010000
/* prev_state bits of a task that exited (TASK_REPORT's EXIT_DEAD, EXIT_ZOMBIE). */
#define EXIT_STATES 0x30

/* Set at load (aya's override_global). */
volatile const __u8 all_threads = 0;
volatile const __u8 follow_forks = 0;
volatile const __u8 user_stacks = 1;
volatile const __u8 kernel_stacks = 1;
volatile const __u64 min_block_ns = 0;

struct config {
    __u64 window_start; /* bpf_ktime_get_ns() when the window opened */
    __u32 open;         /* window_start is set */
    __u32 present;      /* the `present` map may hold entries */
};

struct start {
    __u64 ts;
    __u32 tgid;
    __s32 ustack;
    __s32 kstack;
    __u32 pad;
};

struct block_key {
    __u32 tgid;
    __u32 tid;
    __s32 ustack;
    __s32 kstack;
    __u32 kind;
    __u32 pad;
};

struct block_val {
    __u64 ns;
    __u64 count;
};

struct thread {
    __u64 comm[2]; /* char[16] */
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct config);
} config SEC(".maps");

/* tgid -> 1: the processes traced (without all_threads). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} targets SEC(".maps");

/* tid -> its switch-out with no switch-in yet. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u32);
    __type(value, struct start);
} start SEC(".maps");

/* tid -> tgid: the targets' threads when the window opened, until their first event. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u32);
    __type(value, __u32);
} present SEC(".maps");

/* tid -> its comm at its last switch. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u32);
    __type(value, struct thread);
} threads SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct block_key);
    __type(value, struct block_val);
} blocks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 16384);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline void note_comm(__u32 tid, __u64 lo, __u64 hi)
{
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (t) {
        t->comm[0] = lo;
        t->comm[1] = hi;
        return;
    }
    struct thread n = { .comm = { lo, hi } };
    if (bpf_map_update_elem(&threads, &tid, &n, BPF_NOEXIST) == -7 /* E2BIG */)
        hwprof_drop(DROP_THREADS);
}

static __always_inline void add_block(__u32 tgid, __u32 tid, __s32 ustack, __s32 kstack,
                                      __u32 kind, __u64 ns)
{
    if (ns < min_block_ns)
        return;
    struct block_key k = {};
    k.tgid = tgid;
    k.tid = tid;
    k.ustack = ustack;
    k.kstack = kstack;
    k.kind = kind;
    struct block_val *v = bpf_map_lookup_elem(&blocks, &k);
    if (!v) {
        struct block_val n = { .ns = ns, .count = 1 };
        long err = bpf_map_update_elem(&blocks, &k, &n, BPF_NOEXIST);
        if (err == 0)
            return;
        if (err != -17 /* EEXIST: another CPU inserted it */) {
            hwprof_drop(DROP_BLOCKS);
            return;
        }
        v = bpf_map_lookup_elem(&blocks, &k);
        if (!v) {
            hwprof_drop(DROP_BLOCKS);
            return;
        }
    }
    __sync_fetch_and_add(&v->ns, ns);
    __sync_fetch_and_add(&v->count, 1);
}

static __always_inline void switch_out(struct sched_switch_args *a, __u32 tid, __u64 now,
                                       struct config *cfg)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32; /* current is prev here */
    if (!all_threads && !bpf_map_lookup_elem(&targets, &tgid))
        return;
    if (cfg->present)
        bpf_map_delete_elem(&present, &tid);
    note_comm(tid, a->prev_comm[0], a->prev_comm[1]);
    if (a->prev_state & EXIT_STATES)
        return; /* its exit: no block */
    struct start s = {};
    s.ts = now;
    s.tgid = tgid;
    s.ustack = user_stacks ? bpf_get_stackid(a, &stacks, BPF_F_USER_STACK) : HWPROF_NO_STACK;
    s.kstack = kernel_stacks ? bpf_get_stackid(a, &stacks, 0) : HWPROF_NO_STACK;
    if (bpf_map_update_elem(&start, &tid, &s, BPF_ANY) != 0)
        hwprof_drop(DROP_STARTS);
}

static __always_inline void switch_in(struct sched_switch_args *a, __u32 tid, __u64 now,
                                      struct config *cfg)
{
    struct start *s = bpf_map_lookup_elem(&start, &tid);
    if (s) {
        __u64 ts = s->ts;
        __u32 tgid = s->tgid;
        __s32 ustack = s->ustack, kstack = s->kstack;
        bpf_map_delete_elem(&start, &tid);
        if (cfg->present)
            bpf_map_delete_elem(&present, &tid);
        if (!cfg->open || now <= cfg->window_start)
            return; /* it ended before the window */
        if (ts < cfg->window_start)
            add_block(tgid, tid, ustack, kstack, KIND_BEFORE_WINDOW, now - cfg->window_start);
        else
            add_block(tgid, tid, ustack, kstack, KIND_ENDED, now - ts);
        return;
    }
    if (!cfg->present)
        return;
    __u32 *p = bpf_map_lookup_elem(&present, &tid);
    if (!p)
        return;
    __u32 tgid = *p;
    bpf_map_delete_elem(&present, &tid);
    note_comm(tid, a->next_comm[0], a->next_comm[1]);
    if (cfg->open && now > cfg->window_start)
        add_block(tgid, tid, HWPROF_NO_STACK, HWPROF_NO_STACK, KIND_BEFORE_WINDOW,
                  now - cfg->window_start);
}

/* What a program on a tracepoint returns: 0 would drop the tracepoint's perf events for
 * every other user of it on the system (perf_trace_run_bpf_submit skips them when the
 * program returns 0), emptying a `perf record -e sched:sched_switch` made meanwhile. */
#define KEEP_PERF_EVENTS 1

SEC("tracepoint/sched/sched_switch")
int offcpu_switch(struct sched_switch_args *a)
{
    __u32 zero = 0;
    struct config *cfg = bpf_map_lookup_elem(&config, &zero);
    if (!cfg)
        return KEEP_PERF_EVENTS;
    __u64 now = bpf_ktime_get_ns();
    __u32 prev = a->prev_pid, next = a->next_pid;
    if (prev)
        switch_out(a, prev, now, cfg);
    if (next)
        switch_in(a, next, now, cfg);
    return KEEP_PERF_EVENTS;
}

/* A new task: with follow_forks, a child process of a target is a target; a new thread
 * is never a thread that was present when the window opened (its tid may be reused). */
SEC("tracepoint/task/task_newtask")
int offcpu_newtask(struct task_newtask_args *a)
{
    __u32 zero = 0, child = a->pid;
    struct config *cfg = bpf_map_lookup_elem(&config, &zero);
    if (cfg && cfg->present)
        bpf_map_delete_elem(&present, &child);
    if (!follow_forks || all_threads || (a->clone_flags & CLONE_THREAD))
        return KEEP_PERF_EVENTS;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!bpf_map_lookup_elem(&targets, &tgid))
        return KEEP_PERF_EVENTS;
    __u8 one = 1;
    if (bpf_map_update_elem(&targets, &child, &one, BPF_ANY) != 0)
        hwprof_drop(DROP_TARGETS);
    return KEEP_PERF_EVENTS;
}
