/* The probe Engine::check loads (never attaches): a tracepoint program that uses what
 * hwprof's programs need (a hash map, a BPF ring buffer, a stack map). */
#include "hwprof.h"

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

SEC("tracepoint/sched/sched_switch")
int check(void *ctx)
{
    __s64 id = bpf_get_stackid(ctx, &check_stacks, 0);
    __u64 *e = bpf_ringbuf_reserve(&check_ring, sizeof(*e), 0);
    if (!e)
        return 0;
    *e = id;
    bpf_ringbuf_submit(e, 0);
    return 0;
}
