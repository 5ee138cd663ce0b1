/* The probe Engine::check loads (never attaches): a raw tracepoint program that uses
 * what hwprof's programs need (a BPF ring buffer, a stack map, a CO-RE read of a kernel
 * struct, which needs the kernel's BTF). */
#include "hwprof.h"
#include <bpf/bpf_core_read.h>

struct task_struct {
    int pid;
} __attribute__((preserve_access_index));

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} check_ring SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 1);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} check_stacks SEC(".maps");

SEC("raw_tracepoint/sched_switch")
int check(struct bpf_raw_tracepoint_args *ctx)
{
    __s64 id = bpf_get_stackid(ctx, &check_stacks, 0);
    struct task_struct *next = (struct task_struct *)ctx->args[2];
    __u64 *e = bpf_ringbuf_reserve(&check_ring, sizeof(*e), 0);
    if (!e)
        return 0;
    *e = id + BPF_CORE_READ(next, pid);
    bpf_ringbuf_submit(e, 0);
    return 0;
}
