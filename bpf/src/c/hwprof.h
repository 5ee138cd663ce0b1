/* What every hwprof BPF program shares: its includes, the stack depth, the `dropped`
 * counters (the bounded-maps rule) and a log2 histogram helper.
 *
 * No vmlinux.h: a program declares the few kernel struct fields it reads itself, with
 * preserve_access_index (CO-RE: relocated against the running kernel's BTF at load),
 * and uprobe programs read the uapi struct pt_regs of <asm/ptrace.h>. Maps are
 * BTF-defined (SEC(".maps")), so objects are built with -g. */
#pragma once
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* Frames kept per stack: perf's default kernel.perf_event_max_stack. A stack map's
 * value_size may not exceed that sysctl times 8. */
#define HWPROF_STACK_DEPTH 127

/* A stack id no one asked for (the options left that kind of stack out). The kernel's
 * own errors are other negative values (-EFAULT, -EEXIST...). */
#define HWPROF_NO_STACK (-1)

/* Every map has max_entries; what did not fit is counted here, one slot per reason
 * (each program names its slots), and hwprof shows it. */
#define HWPROF_DROPPED_SLOTS 8
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, HWPROF_DROPPED_SLOTS);
    __type(key, __u32);
    __type(value, __u64);
} dropped SEC(".maps");

static __always_inline void hwprof_drop(__u32 slot)
{
    __u64 *c = bpf_map_lookup_elem(&dropped, &slot);
    if (c)
        __sync_fetch_and_add(c, 1);
}

/* clone(2)'s flag for a new thread (no new process). */
#define HWPROF_CLONE_THREAD 0x00010000

/* On task_newtask, in the parent: the child process of a target becomes a target (a new
 * thread is in its process already). `targets` is the program's hash map of target
 * tgids (u32 -> u8); a child with no room is counted in `dropped` slot `drop`. */
static __always_inline void hwprof_follow_fork(void *targets, __u32 child, __u64 clone_flags,
                                               __u32 drop)
{
    if (clone_flags & HWPROF_CLONE_THREAD)
        return;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!bpf_map_lookup_elem(targets, &tgid))
        return;
    __u8 one = 1;
    if (bpf_map_update_elem(targets, &child, &one, BPF_ANY) != 0)
        hwprof_drop(drop);
}

/* A window of the program's own (HWPROF_GATE(exec_program), in an object whose programs
 * run on perf events' hits whether those events are enabled or not): `gate` holds 0
 * while counting; the pid of a held command whose exec opens it (set by user space
 * before the command goes on, cleared by the exec program, a raw tracepoint on
 * sched_process_exec in the exec'ing task's context); or u32::MAX, closed.
 * hwprof_armed() says whether to count. */
#define HWPROF_GATE(exec_program)                                                          \
    struct {                                                                               \
        __uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
        __uint(max_entries, 1);                                                            \
        __type(key, __u32);                                                                \
        __type(value, __u32);                                                              \
    } gate SEC(".maps");                                                                   \
    static __always_inline int hwprof_armed(void)                                          \
    {                                                                                      \
        __u32 k = 0;                                                                       \
        __u32 *g = bpf_map_lookup_elem(&gate, &k);                                         \
        return g && *g == 0;                                                               \
    }                                                                                      \
    SEC("raw_tracepoint/sched_process_exec")                                               \
    int exec_program(void *ctx)                                                            \
    {                                                                                      \
        __u32 k = 0;                                                                       \
        __u32 *g = bpf_map_lookup_elem(&gate, &k);                                         \
        if (g && *g && *g == (__u32)(bpf_get_current_pid_tgid() >> 32))                    \
            *g = 0;                                                                        \
        return 0;                                                                          \
    }

/* The log2 slot of v: 0 for 0 and 1, else floor(log2(v)), at most 63. */
static __always_inline __u32 hwprof_log2(__u64 v)
{
    __u32 r = 0, s;
    s = (v > 0xffffffffULL) << 5; v >>= s; r |= s;
    s = (v > 0xffffULL) << 4;     v >>= s; r |= s;
    s = (v > 0xffULL) << 3;       v >>= s; r |= s;
    s = (v > 0xfULL) << 2;        v >>= s; r |= s;
    s = (v > 0x3ULL) << 1;        v >>= s; r |= s;
    r |= (v >> 1);
    return r;
}

char LICENSE[] SEC("license") = "GPL"; /* bpf_get_stackid and friends are GPL-only */
