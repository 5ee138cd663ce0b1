/* Allocations, paired per thread from a uprobe at an allocator's entry (the size it is
 * asked for) to a uretprobe at its return (the pointer it gives), and frees: what the
 * allocated-bytes and leaked-bytes views are made of.
 * - `allocated`: per (process, user stack at the return: the allocating call chain),
 *   allocations and bytes;
 * - `outstanding`: per pointer, its size, stack and process: what is still allocated
 *   (a free, or a successful realloc of it, deletes it);
 * - `counts`: allocations, bytes, frees, frees of pointers allocated before tracing.
 * Functions: malloc(size), calloc(n, size), realloc(ptr, size), reallocarray(ptr, n,
 * size), aligned_alloc and memalign(align, size), valloc(size) (entry programs, then
 * `alloc_return` at their return: the pointer it returns), posix_memalign(&ptr, align,
 * size) (`alloc_posix_return`: the pointer it stored, when it returns 0), free(ptr).
 * Each block keeps when it was allocated, for its age. The programs count inside the
 * window of `gate` (HWPROF_GATE: they run on every hit of the uprobes' perf events,
 * enabled or not): the entries and free check it, a return pairs what its entry took.
 * One call timed per thread: a call made inside another (C++'s operator new calls
 * malloc, and both are probed: the stack at operator new's return names its caller,
 * which libstdc++'s frames, without frame pointers, would hide) is counted in the
 * outer one's `depth` and left out; the outer one's return pairs with its entry.
 *
 * Bounded: every map has max_entries (`outstanding` allocates its entries as they come,
 * not at load); what did not fit is counted in `dropped`. */
#include "hwprof.h"
#include <asm/ptrace.h>

#define DROP_PENDING 0     /* a call whose thread found no room in `pending`: not counted */
#define DROP_OUTSTANDING 1 /* an allocation with no room in `outstanding`: not in the leaks */
#define DROP_SITES 2       /* an allocation whose (process, stack) found no room in `allocated` */

#define COUNT_ALLOCS 0
#define COUNT_BYTES 1
#define COUNT_FREES 2
#define COUNT_UNKNOWN_FREES 3 /* frees of pointers allocated before tracing (or not seen) */

volatile const __u8 user_stacks = 1;

struct pending {
    __u64 size;
    __u64 old;    /* realloc's pointer, freed when it succeeds */
    __u64 memptr; /* posix_memalign's, where it stores the pointer */
    __u64 depth;  /* allocator calls in progress inside this one */
};

struct allocation {
    __u64 size;
    __u32 tgid;
    __s32 stack;
    __u64 ts; /* when it was allocated (bpf_ktime_get_ns) */
};

struct site_key {
    __u32 tgid;
    __s32 stack;
};

struct site {
    __u64 count;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 10240);
    __type(key, __u64);
    __type(value, struct pending);
} pending SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 20);
    __type(key, __u64);
    __type(value, struct allocation);
} outstanding SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, struct site_key);
    __type(value, struct site);
} allocated SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 4096);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

HWPROF_GATE(alloc_exec)

static __always_inline void add(__u32 slot, __u64 n)
{
    __u64 *c = bpf_map_lookup_elem(&counts, &slot);
    if (c)
        __sync_fetch_and_add(c, n);
}

static __always_inline int begin(__u64 size, __u64 old, __u64 memptr)
{
    if (!hwprof_armed())
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    struct pending *in = bpf_map_lookup_elem(&pending, &id);
    if (in) {
        __sync_fetch_and_add(&in->depth, 1); /* inside another: its return pairs */
        return 0;
    }
    struct pending p = {.size = size, .old = old, .memptr = memptr};
    if (bpf_map_update_elem(&pending, &id, &p, BPF_ANY) != 0)
        hwprof_drop(DROP_PENDING);
    return 0;
}

static __always_inline void forget(__u64 ptr)
{
    if (!ptr)
        return;
    add(COUNT_FREES, 1);
    if (bpf_map_delete_elem(&outstanding, &ptr) != 0)
        add(COUNT_UNKNOWN_FREES, 1);
}

SEC("uprobe")
int alloc_malloc(struct pt_regs *ctx)
{
    return begin(ctx->rdi, 0, 0);
}

SEC("uprobe")
int alloc_calloc(struct pt_regs *ctx)
{
    return begin(ctx->rdi * ctx->rsi, 0, 0);
}

SEC("uprobe")
int alloc_realloc(struct pt_regs *ctx)
{
    return begin(ctx->rsi, ctx->rdi, 0);
}

/* reallocarray(ptr, n, size) */
SEC("uprobe")
int alloc_reallocarray(struct pt_regs *ctx)
{
    return begin(ctx->rsi * ctx->rdx, ctx->rdi, 0);
}

/* aligned_alloc(align, size), memalign(align, size) */
SEC("uprobe")
int alloc_aligned(struct pt_regs *ctx)
{
    return begin(ctx->rsi, 0, 0);
}

/* posix_memalign(void **memptr, align, size) */
SEC("uprobe")
int alloc_posix_memalign(struct pt_regs *ctx)
{
    return begin(ctx->rdx, 0, ctx->rdi);
}

/* The block `ptr` of the call in progress (`size`, realloc's `old`) is allocated. */
static __always_inline int allocated_now(struct pt_regs *ctx, __u64 id, __u64 size, __u64 old,
                                         __u64 ptr)
{
    if (!ptr) {
        /* Failed: nothing allocated, realloc's block kept; but realloc(p, 0) frees p
         * (glibc's REALLOC_ZERO_BYTES_FREES) and returns NULL. */
        if (old && !size)
            forget(old);
        return 0;
    }
    if (old)
        forget(old);
    add(COUNT_ALLOCS, 1);
    add(COUNT_BYTES, size);
    struct allocation a = {
        .size = size,
        .tgid = id >> 32,
        .stack = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : HWPROF_NO_STACK,
        .ts = bpf_ktime_get_ns(),
    };
    if (bpf_map_update_elem(&outstanding, &ptr, &a, BPF_ANY) != 0)
        hwprof_drop(DROP_OUTSTANDING);
    struct site_key k = {.tgid = a.tgid, .stack = a.stack};
    struct site *s = bpf_map_lookup_elem(&allocated, &k);
    if (!s) {
        struct site one = {.count = 1, .bytes = size};
        if (bpf_map_update_elem(&allocated, &k, &one, BPF_NOEXIST) == 0)
            return 0;
        s = bpf_map_lookup_elem(&allocated, &k);
        if (!s) {
            hwprof_drop(DROP_SITES);
            return 0;
        }
    }
    __sync_fetch_and_add(&s->count, 1);
    __sync_fetch_and_add(&s->bytes, size);
    return 0;
}

/* Takes thread id's call in progress into `c`; 0 when it has none, or when this is
 * the return of a call inside it. */
static __always_inline int take_pending(__u64 id, struct pending *c)
{
    struct pending *p = bpf_map_lookup_elem(&pending, &id);
    if (!p)
        return 0;
    if (p->depth) {
        p->depth--; /* the thread's own: nothing else touches it */
        return 0;
    }
    *c = *p;
    bpf_map_delete_elem(&pending, &id);
    return 1;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct pending c;
    if (!take_pending(id, &c))
        return 0;
    return allocated_now(ctx, id, c.size, c.old, ctx->rax);
}

/* posix_memalign returns 0 and stores the pointer at memptr, or an error number. */
SEC("uretprobe")
int alloc_posix_return(struct pt_regs *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    struct pending c;
    if (!take_pending(id, &c))
        return 0;
    __u64 ptr = 0;
    if (ctx->rax != 0 || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)c.memptr) != 0)
        return 0;
    return allocated_now(ctx, id, c.size, 0, ptr);
}

SEC("uprobe")
int alloc_free(struct pt_regs *ctx)
{
    if (!hwprof_armed())
        return 0;
    forget(ctx->rdi);
    return 0;
}
