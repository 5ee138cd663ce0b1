/* System calls paired per thread from their entry to their exit (raw tracepoints
 * sys_enter and sys_exit): what `hwprof io` is made of.
 * - `sums`: per (process, thread, syscall number, user stack at the call, the frameless
 *   leaf's caller, fd, the fd's generation), calls, ns spent in the kernel, bytes (the
 *   positive results of the calls user space marks as byte counts in `wanted`: read,
 *   write...) and errors (negative results);
 * - `hdr`: per (process, fd, generation, syscall, HdrHistogram counts index of the ns),
 *   calls: user space rebuilds each file's and each syscall's histogram exactly (3
 *   significant digits) and so their percentiles;
 * - `events` (a BPF ring buffer): the fd table's changes (opens with the path read at
 *   the entry, dups, pipes, sockets, accepts with the inode of the new file read from the
 *   task's file table through CO-RE, closes, forks of targets) and the calls slower
 *   than min_ns when slow_events is set, each with its stack.
 * `fdgen` keeps a generation per (process, fd), bumped each time the fd is made anew:
 * a call's (fd, generation) names the file as it was when the call was made.
 * Which syscalls: those set in `wanted` (bit 1: timed; 2: its result is bytes; 4: its
 * first argument is the fd) and those in `fdop` (the fd table's changes), or all with
 * all_syscalls. Which threads: every thread with all_threads, else those of the
 * `targets` processes (their children added as they fork with follow_forks; a held
 * command's from its exec on).
 *
 * Bounded: every map has max_entries; what did not fit is counted in `dropped`. */
#include "hwprof.h"
#include <asm/ptrace.h>
#include <bpf/bpf_core_read.h>

#define DROP_SUMS 0    /* a call whose key found no room in `sums` */
#define DROP_STARTS 1  /* a call whose thread found no room in `start`: not counted */
#define DROP_TARGETS 2 /* a child process with no room in `targets`: not followed */
#define DROP_EVENTS 3  /* an fd-table change or slow call the ring buffer had no room for */
#define DROP_HDR 4     /* a duration whose `hdr` key found no room: not in the percentiles */
#define DROP_GENS 5    /* an fd made anew with no room in `fdgen`: its calls named as before */

#define MAX_SYSCALL 512
#define PATH_MAX_READ 256
#define HDR_HALF_SHIFT 10
#define CALLER_WORDS 8 /* the words above the stack pointer searched for the leaf's caller */

#define WANT_TIMED 1
#define WANT_BYTES 2
#define WANT_FD_ARG0 4

/* fdop values: how a syscall changes the fd table */
#define OP_OPENAT 1     /* openat, openat2: dirfd arg0, path arg1, new fd = result */
#define OP_OPEN 2       /* open, creat: path arg0, new fd = result */
#define OP_DUP 3        /* dup, dup2, dup3: old fd arg0, new fd = result */
#define OP_FCNTL 4      /* fcntl: a dup when arg1 is F_DUPFD or F_DUPFD_CLOEXEC */
#define OP_PIPE 5       /* pipe, pipe2: int[2] at arg0 */
#define OP_SOCKET 6     /* socket, accept, accept4: new fd = result */
#define OP_SOCKETPAIR 7 /* socketpair: int[2] at arg3 */
#define OP_CLOSE 8      /* close: arg0, when it returns 0 */

/* event kinds */
#define EV_OPEN 1  /* fd, gen, src = dirfd (with src_gen), path */
#define EV_NEW 2   /* fd, gen, inode and mode (pipes, sockets, accepted sockets) */
#define EV_DUP 3   /* fd, gen, src, src_gen, inode and mode */
#define EV_CLOSE 4 /* fd */
#define EV_FORK 5  /* fd = the child process */
#define EV_SLOW 6  /* a slow call */

#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030

struct task_struct;

struct inode {
    unsigned short i_mode;
    unsigned long i_ino;
} __attribute__((preserve_access_index));

struct file {
    struct inode *f_inode;
} __attribute__((preserve_access_index));

struct fdtable {
    unsigned int max_fds;
    struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
    struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
    int tgid;
    struct files_struct *files;
} __attribute__((preserve_access_index));

volatile const __u8 all_threads = 0;
volatile const __u8 all_syscalls = 0;
volatile const __u8 follow_forks = 1;
volatile const __u8 user_stacks = 1;
volatile const __u8 slow_events = 0;
volatile const __u64 min_ns = 0;

struct start {
    __u64 ts;
    __u64 caller;
    __u64 arg0;
    __u64 arg1;
    __u64 arg3;
    __u32 nr;
    __s32 stack;
    __s32 fd;
    __u32 gen;
};

struct sum_key {
    __u32 tgid;
    __u32 tid;
    __u32 nr;
    __s32 stack;
    __u64 caller;
    __s32 fd;
    __u32 gen;
};

struct sum {
    __u64 count;
    __u64 ns;
    __u64 bytes;
    __u64 errors;
};

struct fd_key {
    __u32 tgid;
    __s32 fd;
};

struct hdr_key {
    __u32 tgid;
    __s32 fd;
    __u32 gen;
    __u32 nr;
    __u32 index;
    __u32 pad;
};

struct event {
    __u32 kind;
    __u32 tgid;
    __u32 tid;
    __s32 fd;
    __u32 gen;
    __s32 src;
    __u32 src_gen;
    __u32 mode;
    __u64 ino;
    /* EV_SLOW */
    __u64 ns;
    __u64 time;
    __u64 caller;
    __s64 ret;
    __u32 nr;
    __s32 stack;
    char path[PATH_MAX_READ];
};

/* tgid -> TARGET, or TARGET_AT_EXEC */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} targets SEC(".maps");

/* syscall number -> WANT_* bits */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_SYSCALL);
    __type(key, __u32);
    __type(value, __u8);
} wanted SEC(".maps");

/* syscall number -> OP_* */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_SYSCALL);
    __type(key, __u32);
    __type(value, __u8);
} fdop SEC(".maps");

/* tid -> the call in progress */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct start);
} start SEC(".maps");

/* tid -> the path of its open in progress, read at the entry */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, char[PATH_MAX_READ]);
} paths SEC(".maps");

/* (tgid, fd) -> generation (absent: 0, the fd as it was when tracing began) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct fd_key);
    __type(value, __u32);
} fdgen SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct sum_key);
    __type(value, struct sum);
} sums SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct hdr_key);
    __type(value, __u64);
} hdr SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
} events SEC(".maps");

/* An empty event (too big for the BPF stack), never written */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, char[PATH_MAX_READ]);
} path_zero SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 16384);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HWPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* targets' values */
#define TARGET 1
#define TARGET_AT_EXEC 2 /* a held command: a target from its exec on (io_exec) */

static __always_inline int traced(__u64 id)
{
    if (all_threads)
        return 1;
    __u32 tgid = id >> 32;
    __u8 *t = bpf_map_lookup_elem(&targets, &tgid);
    return t && *t == TARGET;
}

static __always_inline __u32 gen_of(__u32 tgid, __s32 fd)
{
    struct fd_key k = {.tgid = tgid, .fd = fd};
    __u32 *g = bpf_map_lookup_elem(&fdgen, &k);
    return g ? *g : 0;
}

/* The fd is made anew: its next generation (0 when there is no room to keep it). */
static __always_inline __u32 bump_gen(__u32 tgid, __s32 fd)
{
    struct fd_key k = {.tgid = tgid, .fd = fd};
    __u32 *g = bpf_map_lookup_elem(&fdgen, &k);
    if (g) {
        __u32 n = *g + 1;
        *g = n;
        return n;
    }
    __u32 one = 1;
    if (bpf_map_update_elem(&fdgen, &k, &one, BPF_ANY) != 0) {
        hwprof_drop(DROP_GENS);
        return 0;
    }
    return 1;
}

/* The inode number and mode of the current task's open file `fd` (0 when unreadable). */
static __always_inline void inode_of(__s32 fd, __u64 *ino, __u32 *mode)
{
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
    *ino = 0;
    *mode = 0;
    if (!fdt || fd < 0 || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
        return;
    struct file **fds = BPF_CORE_READ(fdt, fd);
    struct file *f = 0;
    if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) != 0 || !f)
        return;
    struct inode *i = BPF_CORE_READ(f, f_inode);
    if (!i)
        return;
    *ino = BPF_CORE_READ(i, i_ino);
    *mode = BPF_CORE_READ(i, i_mode);
}

/* HdrHistogram's counts index of v (3 significant digits, unit 1): latency.bpf.c's. */
static __always_inline __u32 hdr_index(__u64 v)
{
    __u32 bucket = hwprof_log2(v | ((1ULL << (HDR_HALF_SHIFT + 1)) - 1)) - HDR_HALF_SHIFT;
    __u64 sub = v >> bucket;
    return ((bucket + 1) << HDR_HALF_SHIFT) + (__u32)(sub - (1ULL << HDR_HALF_SHIFT));
}

/* Whether `ret` is the return address of a call to the function holding `ip`: the
 * instruction before it is a direct call (e8 rel32) whose target holds ip, or jumps
 * there through a PLT slot (ff 25, or endbr64 + bnd jmp), or an indirect call through
 * the GOT (ff 15). */
static __always_inline int returns_into(__u64 ret, __u64 ip)
{
    __u8 b[6];
    if (bpf_probe_read_user(b, sizeof(b), (void *)(ret - 6)) != 0)
        return 0;
    __u64 target = 0;
    if (b[1] == 0xe8) {
        __s32 rel;
        __builtin_memcpy(&rel, &b[2], 4);
        target = ret + (__s64)rel;
        if (ip >= target && ip - target < 65536)
            return 1;
        /* a PLT stub: jmp *slot(%rip), after an endbr64 (and bnd) or not */
        __u8 p[11];
        if (bpf_probe_read_user(p, sizeof(p), (void *)target) != 0)
            return 0;
        __u64 slot = 0;
        __s32 d;
        if (p[0] == 0xff && p[1] == 0x25) {
            __builtin_memcpy(&d, &p[2], 4);
            slot = target + 6 + (__s64)d;
        } else if (p[0] == 0xf3 && p[4] == 0xf2 && p[5] == 0xff && p[6] == 0x25) {
            __builtin_memcpy(&d, &p[7], 4);
            slot = target + 11 + (__s64)d;
        } else if (p[0] == 0xf3 && p[4] == 0xff && p[5] == 0x25) {
            __builtin_memcpy(&d, &p[6], 4);
            slot = target + 10 + (__s64)d;
        } else {
            return 0;
        }
        if (bpf_probe_read_user(&target, sizeof(target), (void *)slot) != 0)
            return 0;
    } else if (b[0] == 0xff && b[1] == 0x15) {
        __s32 d;
        __builtin_memcpy(&d, &b[2], 4);
        if (bpf_probe_read_user(&target, sizeof(target), (void *)(ret + (__s64)d)) != 0)
            return 0;
    } else {
        return 0;
    }
    return ip >= target && ip - target < 65536;
}

/* The caller of a syscall wrapper that sets up no frame (glibc's read, write...): the
 * frame-pointer walk goes from the wrapper to its caller's caller, so its caller is
 * searched for among the first words above the stack pointer. 0: none found. */
static __always_inline __u64 leaf_caller(struct pt_regs *regs)
{
    __u64 words[CALLER_WORDS];
    if (bpf_probe_read_user(words, sizeof(words), (void *)regs->rsp) != 0)
        return 0;
#pragma unroll
    for (int i = 0; i < CALLER_WORDS; i++) {
        __u64 w = words[i];
        if (w > 4096 && w < 0x800000000000ULL && returns_into(w, regs->rip))
            return w;
    }
    return 0;
}

/* sys_enter: TP_PROTO(struct pt_regs *regs, long id) */
SEC("raw_tracepoint/sys_enter")
int io_enter(struct bpf_raw_tracepoint_args *a)
{
    __u32 nr = a->args[1];
    __u8 want = 0, op = 0;
    __u8 *w = bpf_map_lookup_elem(&wanted, &nr);
    if (w)
        want = *w;
    __u8 *o = bpf_map_lookup_elem(&fdop, &nr);
    if (o)
        op = *o;
    if (all_syscalls)
        want |= WANT_TIMED;
    if (!want && !op)
        return 0;
    __u64 id = bpf_get_current_pid_tgid();
    if (!traced(id))
        return 0;
    struct pt_regs regs;
    if (bpf_probe_read_kernel(&regs, sizeof(regs), (void *)a->args[0]) != 0)
        return 0;
    __u32 tid = id;
    struct start s = {
        .ts = 0,
        .nr = nr,
        .stack = HWPROF_NO_STACK,
        .fd = -1,
        .arg0 = regs.rdi,
        .arg1 = regs.rsi,
        .arg3 = regs.r10,
    };
    if (want & WANT_TIMED) {
        if (user_stacks) {
            s.stack = bpf_get_stackid(a, &stacks, BPF_F_USER_STACK);
            s.caller = leaf_caller(&regs);
        }
        if (want & WANT_FD_ARG0) {
            s.fd = (__s32)regs.rdi;
            s.gen = gen_of(id >> 32, s.fd);
        }
    }
    if (op == OP_OPENAT || op == OP_OPEN) {
        __u32 k = 0;
        char *zero = bpf_map_lookup_elem(&path_zero, &k);
        if (zero) {
            bpf_map_update_elem(&paths, &tid, zero, BPF_ANY);
            char *p = bpf_map_lookup_elem(&paths, &tid);
            if (p)
                bpf_probe_read_user_str(p, PATH_MAX_READ,
                                        (void *)(op == OP_OPENAT ? regs.rsi : regs.rdi));
        }
    }
    s.ts = bpf_ktime_get_ns();
    if (bpf_map_update_elem(&start, &tid, &s, BPF_ANY) != 0)
        hwprof_drop(DROP_STARTS);
    return 0;
}

static __always_inline struct event *new_event(__u32 kind, __u64 id)
{
    struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        hwprof_drop(DROP_EVENTS);
        return 0;
    }
    __builtin_memset(e, 0, sizeof(*e) - PATH_MAX_READ);
    e->path[0] = 0;
    e->kind = kind;
    e->tgid = id >> 32;
    e->tid = (__u32)id;
    return e;
}

/* A new fd (of a pipe, a socket, an accepted connection or a dup of `src`). */
static __always_inline void new_fd(__u64 id, __u32 kind, __s32 fd, __s32 src)
{
    __u32 tgid = id >> 32;
    __u32 src_gen = src >= 0 ? gen_of(tgid, src) : 0;
    __u32 gen = bump_gen(tgid, fd);
    struct event *e = new_event(kind, id);
    if (!e)
        return;
    e->fd = fd;
    e->gen = gen;
    e->src = src;
    e->src_gen = src_gen;
    inode_of(fd, &e->ino, &e->mode);
    bpf_ringbuf_submit(e, 0);
}

static __always_inline void fd_table(__u64 id, struct start *st, __u8 op, long ret)
{
    __u32 tgid = id >> 32;
    __u32 tid = id;
    if (op == OP_OPENAT || op == OP_OPEN) {
        char *p = bpf_map_lookup_elem(&paths, &tid);
        if (ret >= 0 && p) {
            __s32 dirfd = op == OP_OPENAT ? (__s32)st->arg0 : -100;
            __u32 dir_gen = dirfd >= 0 ? gen_of(tgid, dirfd) : 0;
            __u32 gen = bump_gen(tgid, (__s32)ret);
            struct event *e = new_event(EV_OPEN, id);
            if (e) {
                e->fd = (__s32)ret;
                e->gen = gen;
                e->src = dirfd;
                e->src_gen = dir_gen;
                inode_of((__s32)ret, &e->ino, &e->mode);
                bpf_probe_read_kernel_str(e->path, PATH_MAX_READ, p);
                bpf_ringbuf_submit(e, 0);
            }
        }
        if (p)
            bpf_map_delete_elem(&paths, &tid);
        return;
    }
    if (ret < 0)
        return;
    if (op == OP_DUP) {
        new_fd(id, EV_DUP, (__s32)ret, (__s32)st->arg0);
    } else if (op == OP_FCNTL) {
        if (st->arg1 == F_DUPFD || st->arg1 == F_DUPFD_CLOEXEC)
            new_fd(id, EV_DUP, (__s32)ret, (__s32)st->arg0);
    } else if (op == OP_SOCKET) {
        new_fd(id, EV_NEW, (__s32)ret, -1);
    } else if (op == OP_PIPE || op == OP_SOCKETPAIR) {
        __s32 fds[2];
        void *at = (void *)(op == OP_PIPE ? st->arg0 : st->arg3);
        if (bpf_probe_read_user(fds, sizeof(fds), at) != 0)
            return;
        new_fd(id, EV_NEW, fds[0], -1);
        new_fd(id, EV_NEW, fds[1], -1);
    } else if (op == OP_CLOSE && ret == 0) {
        struct event *e = new_event(EV_CLOSE, id);
        if (e) {
            e->fd = (__s32)st->arg0;
            e->gen = gen_of(tgid, e->fd);
            bpf_ringbuf_submit(e, 0);
        }
    }
}

static __always_inline void count_hdr(__u32 tgid, struct start *st, __u64 ns)
{
    struct hdr_key hk = {
        .tgid = tgid, .fd = st->fd, .gen = st->gen, .nr = st->nr, .index = hdr_index(ns)};
    __u64 *h = bpf_map_lookup_elem(&hdr, &hk);
    if (!h) {
        __u64 one = 1;
        if (bpf_map_update_elem(&hdr, &hk, &one, BPF_NOEXIST) == 0)
            return;
        h = bpf_map_lookup_elem(&hdr, &hk); /* another CPU added it meanwhile */
        if (!h) {
            hwprof_drop(DROP_HDR);
            return;
        }
    }
    __sync_fetch_and_add(h, 1);
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
    __u8 op = 0;
    __u8 *o = bpf_map_lookup_elem(&fdop, &st.nr);
    if (o)
        op = *o;
    if (op)
        fd_table(id, &st, op, ret);
    __u8 want = 0;
    __u8 *w = bpf_map_lookup_elem(&wanted, &st.nr);
    if (w)
        want = *w;
    if (all_syscalls)
        want |= WANT_TIMED;
    if (!(want & WANT_TIMED))
        return 0;
    __u64 ns = now - st.ts;
    if (ns < min_ns)
        return 0;
    if (!(want & WANT_FD_ARG0) && (op == OP_OPENAT || op == OP_OPEN)) {
        /* an open is the new file's: its fd and generation now */
        st.fd = ret >= 0 ? (__s32)ret : -1;
        st.gen = ret >= 0 ? gen_of(id >> 32, st.fd) : 0;
    }
    struct sum_key k = {.tgid = id >> 32,
                        .tid = tid,
                        .nr = st.nr,
                        .stack = st.stack,
                        .caller = st.caller,
                        .fd = st.fd,
                        .gen = st.gen};
    __u64 bytes = ((want & WANT_BYTES) && ret > 0) ? (__u64)ret : 0;
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
    count_hdr(id >> 32, &st, ns);
    if (slow_events) {
        struct event *e = new_event(EV_SLOW, id);
        if (e) {
            e->fd = st.fd;
            e->gen = st.gen;
            e->ns = ns;
            e->time = now;
            e->caller = st.caller;
            e->ret = ret;
            e->nr = st.nr;
            e->stack = st.stack;
            bpf_ringbuf_submit(e, 0);
        }
    }
    return 0;
}

/* task_newtask: TP_PROTO(struct task_struct *task, u64 clone_flags), in the parent */
SEC("raw_tracepoint/task_newtask")
int io_newtask(struct bpf_raw_tracepoint_args *a)
{
    if (all_threads || !follow_forks)
        return 0;
    struct task_struct *task = (struct task_struct *)a->args[0];
    __u32 child = BPF_CORE_READ(task, pid);
    hwprof_follow_fork(&targets, child, a->args[1], DROP_TARGETS);
    if (a->args[1] & HWPROF_CLONE_THREAD)
        return 0;
    if (!bpf_map_lookup_elem(&targets, &child))
        return 0;
    /* The child's fds are its parent's as they are now. */
    struct event *e = new_event(EV_FORK, bpf_get_current_pid_tgid());
    if (e) {
        e->fd = child;
        bpf_ringbuf_submit(e, 0);
    }
    return 0;
}

/* sched_process_exec, in the exec'ing task's context: a held command becomes a target
 * (what it did before, in hwprof's hands, is not its own). */
SEC("raw_tracepoint/sched_process_exec")
int io_exec(void *ctx)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    __u8 *t = bpf_map_lookup_elem(&targets, &tgid);
    if (t && *t == TARGET_AT_EXEC)
        *t = TARGET;
    return 0;
}
