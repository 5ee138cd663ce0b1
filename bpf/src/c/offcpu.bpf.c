/* Off-CPU time summed in the kernel: per (tgid, tid, user stack, kernel stack, kind),
 * the nanoseconds target threads spent switched out and how many blocks that was.
 *
 * A block runs from a thread's switch-out (sched_switch with it as prev; its stacks
 * taken then, in its context) to its next switch-in (sched_switch with it as next).
 * Every switch-out counts, preempted or blocked, as hwprof's perf-event path and
 * perf's/bcc's offcputime do; a thread's last switch-out (exit_state zombie or dead:
 * it exited) is its end, not a block. The idle tasks (pid 0) never block.
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
#include <bpf/bpf_core_read.h>

#define KIND_ENDED 0
#define KIND_BEFORE_WINDOW 1

#define DROP_BLOCKS 0   /* a (thread, stacks) sum that did not fit `blocks` */
#define DROP_STARTS 1   /* a switch-out that did not fit `start`: that block is lost */
#define DROP_THREADS 2  /* a thread's comm that did not fit `threads` */
#define DROP_TARGETS 3  /* a forked child that did not fit `targets` (not followed) */

/* The programs run on raw tracepoints: the kernel calls them straight from the
 * tracepoint. A classic (perf) tracepoint program runs after perf's trace buffer and
 * its recursion guard, which on some kernels lose switches: on the 6.18 VM hwprof is
 * tested on, 6 of 5346 sched_switch events never reached a classic program while a raw
 * one on the same tracepoint saw all (a lost switch-in loses a whole block). Raw
 * tracepoints pass the tracepoint's own arguments (task_struct pointers), read with
 * CO-RE (field offsets relocated against the running kernel's BTF at load).
 *
 * sched_switch: TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct
 * *next, ...), fired in prev's context. task_newtask: TP_PROTO(struct task_struct
 * *task, u64 clone_flags). Both unchanged since 4.x in these arguments. */
struct sched_entity {
    __u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct mm_struct;

struct task_struct {
    int pid;
    int tgid;
    int exit_state;
    char comm[16];
    struct sched_entity se;
    struct mm_struct *mm;
} __attribute__((preserve_access_index));

/* task_struct.exit_state of a task that exited (EXIT_ZOMBIE, EXIT_DEAD). */
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
    __u32 present;      /* entries left in the `present` map (none: no lookups) */
    __u64 window_end;   /* when the window closed (the recording's events were
                         * disabled), 0 while it is open: nothing counts after it */
};

struct start {
    __u64 ts;
    __u32 tgid;
    __s32 ustack;
    __s32 kstack;
    __u32 pad;
    __u64 runtime; /* the thread's se.sum_exec_runtime then */
};

/* A thread present when the window opened (filled by user space from /proc). */
struct present {
    __u32 tgid;
    __u32 pad;
    __u64 runtime; /* its sum_exec_runtime then (/proc/T/schedstat); NO_RUNTIME when it
                      was running or runnable */
};

#define NO_RUNTIME (~0ULL)

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
    char comm[16];
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

/* tid -> the targets' threads when the window opened, until their first event. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u32);
    __type(value, struct present);
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

/* Records thread tid's comm (`t`, filled by the caller). */
static __always_inline void note_comm(__u32 tid, struct thread *t)
{
    struct thread *old = bpf_map_lookup_elem(&threads, &tid);
    if (old) {
        __builtin_memcpy(old->comm, t->comm, sizeof(t->comm));
        return;
    }
    if (bpf_map_update_elem(&threads, &tid, t, BPF_NOEXIST) == -7 /* E2BIG */)
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

/* Ends thread tid's block that began at s (its switch-out) at `end`. */
/* `end`, or the window's end when it came first. */
static __always_inline __u64 cut(__u64 end, struct config *cfg)
{
    return cfg->window_end && end > cfg->window_end ? cfg->window_end : end;
}

static __always_inline void end_block(__u32 tid, struct start *s, __u64 end,
                                      struct config *cfg)
{
    end = cut(end, cfg);
    if (!cfg->open || end <= cfg->window_start)
        return; /* it ended before the window */
    if (s->ts < cfg->window_start)
        add_block(s->tgid, tid, s->ustack, s->kstack, KIND_BEFORE_WINDOW,
                  end - cfg->window_start);
    else if (end > s->ts)
        add_block(s->tgid, tid, s->ustack, s->kstack, KIND_ENDED, end - s->ts);
}

/* Deletes thread tid's `present` entry, if the map still holds any, and counts it
 * gone: once every present thread has switched, switches look it up no more. */
static __always_inline void forget_present(__u32 tid, struct config *cfg)
{
    if (cfg->present && bpf_map_delete_elem(&present, &tid) == 0)
        __sync_fetch_and_add(&cfg->present, (__u32)-1); /* no atomic sub in BPF */
}

/* Ends the block of present thread tid (off CPU since before the window) at `end`. */
static __always_inline void end_present(__u32 tid, __u32 tgid, __u64 end, struct config *cfg)
{
    end = cut(end, cfg);
    if (cfg->open && end > cfg->window_start)
        add_block(tgid, tid, HWPROF_NO_STACK, HWPROF_NO_STACK, KIND_BEFORE_WINDOW,
                  end - cfg->window_start);
}

/* When a thread resumed: `runtime` ns of CPU time ago, seen from a switch-out at `now`
 * (0 when the clocks disagree). */
static __always_inline __u64 resumed_at(__u64 now, __u64 runtime_now, __u64 runtime_then)
{
    __u64 ran = runtime_now - runtime_then;
    return runtime_now >= runtime_then && ran < now ? now - ran : 0;
}

/* Ends thread tid's wait in progress, if it has one: the block from its seen
 * switch-out (`start`), else its wait since before the window (`present`). At its
 * switch-in (`seen`) the wait ends now. At a switch-out whose switch-in went unseen
 * (on some kernels, the 6.18 VM hwprof is tested on, about one wake-up in a thousand
 * reaches no sched_switch program, raw or classic, nor sched_wakeup) it ended where
 * the thread resumed: now minus the CPU time it ran since (`runtime` is its
 * se.sum_exec_runtime now, which __schedule brought up to date before this
 * tracepoint). Returns whether a `present` wait was ended. */
static __always_inline int end_wait(__u32 tid, int seen, __u64 runtime, __u64 now,
                                    struct config *cfg)
{
    struct start *s = bpf_map_lookup_elem(&start, &tid);
    if (s) {
        struct start old = *s;
        bpf_map_delete_elem(&start, &tid);
        forget_present(tid, cfg);
        end_block(tid, &old, seen ? now : resumed_at(now, runtime, old.runtime), cfg);
        return 0;
    }
    if (!cfg->present)
        return 0;
    struct present *p = bpf_map_lookup_elem(&present, &tid);
    if (!p)
        return 0;
    struct present old = *p;
    forget_present(tid, cfg);
    if (seen)
        end_present(tid, old.tgid, now, cfg);
    else if (old.runtime != NO_RUNTIME)
        end_present(tid, old.tgid, resumed_at(now, runtime, old.runtime), cfg);
    return 1;
}

static __always_inline void switch_out(struct bpf_raw_tracepoint_args *a,
                                       struct task_struct *prev, __u32 tid, __u32 tgid,
                                       __u64 now, struct config *cfg)
{
    if (!all_threads && !bpf_map_lookup_elem(&targets, &tgid))
        return;
    __u64 runtime = BPF_CORE_READ(prev, se.sum_exec_runtime);
    end_wait(tid, 0, runtime, now, cfg); /* its switch-in went unseen, if it has one */
    struct thread t = {};
    bpf_get_current_comm(t.comm, sizeof(t.comm)); /* current is prev here */
    note_comm(tid, &t);
    if (BPF_CORE_READ(prev, exit_state) & EXIT_STATES)
        return; /* its exit: no block */
    if (cfg->window_end)
        return; /* the window has closed: no block begins */
    struct start s = {};
    s.ts = now;
    s.tgid = tgid;
    s.runtime = runtime;
    /* No user memory (a kernel thread, or a thread past exit_mm that blocks on its way
     * out): no user stack, as perf's callchain has none then, rather than -EFAULT. */
    s.ustack = user_stacks && BPF_CORE_READ(prev, mm)
                   ? bpf_get_stackid(a, &stacks, BPF_F_USER_STACK)
                   : HWPROF_NO_STACK;
    s.kstack = kernel_stacks ? bpf_get_stackid(a, &stacks, 0) : HWPROF_NO_STACK;
    if (bpf_map_update_elem(&start, &tid, &s, BPF_ANY) != 0)
        hwprof_drop(DROP_STARTS);
}

static __always_inline void switch_in(struct task_struct *next, __u32 tid, __u64 now,
                                      struct config *cfg)
{
    if (!end_wait(tid, 1, 0, now, cfg))
        return;
    /* A present thread's first switch: its comm, as a switch-out would note it. */
    struct thread t = {};
    bpf_core_read(t.comm, sizeof(t.comm), &next->comm);
    note_comm(tid, &t);
}

SEC("raw_tracepoint/sched_switch")
int offcpu_switch(struct bpf_raw_tracepoint_args *a)
{
    __u32 zero = 0;
    struct config *cfg = bpf_map_lookup_elem(&config, &zero);
    if (!cfg)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct task_struct *prev = (struct task_struct *)a->args[1];
    struct task_struct *next = (struct task_struct *)a->args[2];
    __u64 id = bpf_get_current_pid_tgid(); /* prev's */
    __u32 prev_tid = (__u32)id, next_tid = BPF_CORE_READ(next, pid);
    if (prev_tid)
        switch_out(a, prev, prev_tid, id >> 32, now, cfg);
    if (next_tid)
        switch_in(next, next_tid, now, cfg);
    return 0;
}

/* A new task: with follow_forks, a child process of a target is a target; a new thread
 * is never a thread that was present when the window opened (its tid may be reused). */
SEC("raw_tracepoint/task_newtask")
int offcpu_newtask(struct bpf_raw_tracepoint_args *a)
{
    struct task_struct *task = (struct task_struct *)a->args[0];
    __u64 clone_flags = a->args[1];
    __u32 zero = 0, child = BPF_CORE_READ(task, pid);
    struct config *cfg = bpf_map_lookup_elem(&config, &zero);
    if (cfg)
        forget_present(child, cfg);
    if (follow_forks && !all_threads)
        hwprof_follow_fork(&targets, child, clone_flags, DROP_TARGETS);
    return 0;
}
