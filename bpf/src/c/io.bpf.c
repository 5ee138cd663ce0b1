/* System calls paired per thread from their entry to their exit (raw tracepoints
 * sys_enter and sys_exit): what the I/O latency views are made of.
 * - `sums`: per (process, thread, syscall number, user stack at the call), calls, ns
 *   spent in the kernel, bytes (the positive results of the calls user space names as
 *   byte counts in `bytes_calls`: read, write...) and errors (negative results);
 * - `hist`: per (syscall number, log2 of the ns), calls.
 * Which syscalls: those set in `wanted` (user space sets them), or all with
 * all_syscalls. Which threads: every thread with all_threads, else those of the `targets`
 * processes (their children added as they fork with follow_forks, read through CO-RE).
 *
 * Bounded: every map has max_entries; what did not fit is counted in `dropped`. */
#include "hwprof.h"
#include <bpf/bpf_core_read.h>

#define DROP_SUMS 0    /* a (thread, syscall, stack) with no room in `sums` */
#define DROP_STARTS 1  /* a call whose thread found no room in `start`: not counted */
#define DROP_TARGETS 2 /* a child process with no room in `targets`: not followed */

#define MAX_SYSCALL 512

struct task_struct {
    int pid;
    int tgid;
} __attribute__((preserve_access_index));

volatile const __u8 all_threads = 0;
volatile const __u8 all_syscalls = 0;
volatile const __u8 follow_forks = 1;
volatile const __u8 user_stacks = 1;

struct start {
    __u64 ts;
    __u32 nr;
    __s32 stack;
};

struct sum_key {
    __u32 tgid;
    __u32 tid;
    __u32 nr;
    __s32 stack;
};

struct sum {
    __u64 count;
    __u64 ns;
    __u64 bytes;
    __u64 errors;
};

struct hist_key {
    __u32 nr;
    __u32 slot;
};

/* tgid -> 1 */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} targets SEC(".maps");

/* syscall number -> 1: traced; 2: traced, and its positive result is bytes */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_SYSCALL);
    __type(key, __u32);
    __type(value, __u8);
} wanted SEC(".maps");

/* tid -> the call in progress */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct start);
} start SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct sum_key);
    __type(value, struct sum);
} sums SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __type(key, struct hist_key);
    __type(value, __u64);
} hist SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 16384);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline int traced(__u64 id)
{
    if (all_threads)
        return 1;
    __u32 tgid = id >> 32;
    return bpf_map_lookup_elem(&targets, &tgid) != 0;
}

/* sys_enter: TP_PROTO(struct pt_regs *regs, long id) */
SEC("raw_tracepoint/sys_enter")
int io_enter(struct bpf_raw_tracepoint_args *a)
{
    __u32 nr = a->args[1];
    if (!all_syscalls) {
        __u8 *w = bpf_map_lookup_elem(&wanted, &nr);
        if (!w || !*w)
            return 0;
    }
    __u64 id = bpf_get_current_pid_tgid();
    if (!traced(id))
        return 0;
    struct start s = {
        .ts = bpf_ktime_get_ns(),
        .nr = nr,
        .stack = user_stacks ? bpf_get_stackid(a, &stacks, BPF_F_USER_STACK) : HWPROF_NO_STACK,
    };
    __u32 tid = id;
    if (bpf_map_update_elem(&start, &tid, &s, BPF_ANY) != 0)
        hwprof_drop(DROP_STARTS);
    return 0;
}

/* sys_exit: TP_PROTO(struct pt_regs *regs, long ret) */
SEC("raw_tracepoint/sys_exit")
int io_exit(struct bpf_raw_tracepoint_args *a)
{
    __u64 now = bpf_ktime_get_ns();
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = id;
    struct start *s = bpf_map_lookup_elem(&start, &tid);
    if (!s)
        return 0;
    struct start st = *s;
    bpf_map_delete_elem(&start, &tid);
    long ret = a->args[1];
    __u64 ns = now - st.ts;
    struct sum_key k = {.tgid = id >> 32, .tid = tid, .nr = st.nr, .stack = st.stack};
    __u8 *w = bpf_map_lookup_elem(&wanted, &st.nr);
    __u64 bytes = (w && *w == 2 && ret > 0) ? (__u64)ret : 0;
    struct sum *v = bpf_map_lookup_elem(&sums, &k);
    if (!v) {
        struct sum zero = {};
        bpf_map_update_elem(&sums, &k, &zero, BPF_NOEXIST);
        v = bpf_map_lookup_elem(&sums, &k);
    }
    if (v) {
        __sync_fetch_and_add(&v->count, 1);
        __sync_fetch_and_add(&v->ns, ns);
        __sync_fetch_and_add(&v->bytes, bytes);
        if (ret < 0)
            __sync_fetch_and_add(&v->errors, 1);
    } else {
        hwprof_drop(DROP_SUMS);
    }
    struct hist_key hk = {.nr = st.nr, .slot = hwprof_log2(ns)};
    __u64 *h = bpf_map_lookup_elem(&hist, &hk);
    if (!h) {
        __u64 one = 1;
        if (bpf_map_update_elem(&hist, &hk, &one, BPF_NOEXIST) == 0)
            return 0;
        h = bpf_map_lookup_elem(&hist, &hk);
    }
    if (h)
        __sync_fetch_and_add(h, 1);
    return 0;
}

/* task_newtask: TP_PROTO(struct task_struct *task, u64 clone_flags), in the parent */
SEC("raw_tracepoint/task_newtask")
int io_newtask(struct bpf_raw_tracepoint_args *a)
{
    if (all_threads || !follow_forks)
        return 0;
    struct task_struct *task = (struct task_struct *)a->args[0];
    hwprof_follow_fork(&targets, BPF_CORE_READ(task, pid), a->args[1], DROP_TARGETS);
    return 0;
}
