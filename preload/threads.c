/*
 * threads.c: the lock-free registry of threads (tid, ours or not, creation
 * stack).  Slots are claimed with a CAS on the tid, starting at a hash of it,
 * and released by storing 0; readers copy slots without any lock and tolerate
 * a slot changing under them (they re-check the tid).  The /proc reader of a
 * thread's files (name, state, and stack/quiet.c's), and the start of the library's
 * own threads, live here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "real.h"
#include "threads.h"

static pe_thread_info_t slots[PE_THREADS_MAX];
/* Walks of the published pe_tls pointers in progress (pe_threads_each_tls). */
static int tls_walkers;
/*
 * The table is 1.1 MB of zeroes until used: a lookup that scanned all of it
 * touched ~280 pages (a page fault each, most of what loading the library
 * cost a short-lived program).  So lookups go no further from a tid's hash
 * than the farthest any claim ever went (raised before the tid is stored,
 * never lowered), and the fork child clears only slots ever claimed.
 */
static unsigned probe_max;
static uint64_t ever_used[PE_THREADS_MAX / 64];

static unsigned
slot_hash(pid_t tid)
{
    return ((unsigned)tid * 2654435761u) % PE_THREADS_MAX;
}

static pe_thread_info_t *
find_slot(pid_t tid)
{
    unsigned i, h = slot_hash(tid), n = __atomic_load_n(&probe_max, __ATOMIC_ACQUIRE);

    for (i = 0; i <= n && i < PE_THREADS_MAX; i++) {
        pe_thread_info_t *s = &slots[(h + i) % PE_THREADS_MAX];
        if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == tid)
            return s;
    }
    return NULL;
}

/* Slot (h + i) is about to be claimed: let lookups reach it. */
static void
note_claim(unsigned h, unsigned i)
{
    unsigned n = __atomic_load_n(&probe_max, __ATOMIC_RELAXED), k = (h + i) % PE_THREADS_MAX;

    while (i > n &&
           !__atomic_compare_exchange_n(&probe_max, &n, i, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
    if (!(__atomic_load_n(&ever_used[k / 64], __ATOMIC_RELAXED) & (1ull << (k % 64))))
        __atomic_fetch_or(&ever_used[k / 64], 1ull << (k % 64), __ATOMIC_SEQ_CST);
}

static pe_thread_info_t *
claim_slot(pid_t tid)
{
    unsigned i, h = slot_hash(tid);
    pe_thread_info_t *s;

    if ((s = find_slot(tid)))
        return s; /* a recycled tid whose previous owner never unregistered */
    for (i = 0; i < PE_THREADS_MAX; i++) {
        pid_t expected = 0;
        s = &slots[(h + i) % PE_THREADS_MAX];
        if (__atomic_load_n(&s->tid, __ATOMIC_RELAXED) != 0)
            continue;
        note_claim(h, i); /* before the CAS: the tid is stored only after it */
        if (__atomic_compare_exchange_n(&s->tid, &expected, -1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return s;
    }
    return NULL;
}

void
pe_threads_register(const uintptr_t *create_pcs, int ncreate)
{
    pid_t tid = pe_gettid();
    pe_thread_info_t *s = claim_slot(tid);

    if (!s)
        return; /* full: the thread is still found through /proc/self/task */
    if (ncreate > PE_THREADS_CREATE_FRAMES)
        ncreate = PE_THREADS_CREATE_FRAMES;
    if (ncreate > 0)
        memcpy(s->create_pcs, create_pcs, (size_t)ncreate * sizeof(*create_pcs));
    s->ncreate = ncreate > 0 ? ncreate : 0;
    s->internal = pe_tls.internal;
    __atomic_store_n(&s->tls, NULL, __ATOMIC_SEQ_CST);
    __atomic_store_n(&s->tid, tid, __ATOMIC_RELEASE);
}

void
pe_threads_mark_internal(void)
{
    pe_thread_info_t *s;

    pe_tls.internal = 1;
    if (!(s = find_slot(pe_gettid()))) {
        pe_threads_register(NULL, 0);
        s = find_slot(pe_gettid());
    }
    if (s)
        s->internal = 1;
}

void
pe_threads_unregister(void)
{
    pe_thread_info_t *s = find_slot(pe_gettid());

    if (!s)
        return;
    /* Withdraw our pe_tls, then let any walk that may still hold it end
       (Dekker: both sides are sequentially consistent) before this thread's
       TLS can go away. */
    __atomic_store_n(&s->tls, NULL, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&tls_walkers, __ATOMIC_SEQ_CST))
        sched_yield();
    __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

void
pe_threads_publish_tls(void)
{
    pe_thread_info_t *s = find_slot(pe_gettid());

    /* It gives things back at exit: it may own a stripe (guard.h) too. */
    pe_tls.may_own_stripe = 1;
    if (s)
        __atomic_store_n(&s->tls, &pe_tls, __ATOMIC_SEQ_CST);
}

void
pe_threads_each_tls(void (*fn)(pe_tls_t *t))
{
    __atomic_fetch_add(&tls_walkers, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < PE_THREADS_MAX; i++) {
        pe_tls_t *t = __atomic_load_n(&slots[i].tls, __ATOMIC_SEQ_CST);
        if (t && !__atomic_load_n(&slots[i].internal, __ATOMIC_RELAXED))
            fn(t);
    }
    __atomic_fetch_sub(&tls_walkers, 1, __ATOMIC_SEQ_CST);
}

PE_SIGSAFE int
pe_threads_is_internal(pid_t tid)
{
    pe_thread_info_t *s = find_slot(tid);

    return s && __atomic_load_n(&s->internal, __ATOMIC_RELAXED);
}

int
pe_threads_list(pe_thread_info_t *out, int max)
{
    int i, n = 0;

    for (i = 0; i < PE_THREADS_MAX && n < max; i++) {
        pid_t tid = __atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE);
        if (tid <= 0 || slots[i].internal)
            continue;
        out[n] = slots[i];
        if (__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE) != tid)
            continue; /* reused while we copied */
        out[n].tid = tid;
        n++;
    }
    return n;
}

void
pe_threads_atfork_child(void)
{
    pid_t self = (pid_t)0;
    int w, i;

    pe_tls.tid = 0;
    self = pe_gettid();
    tls_walkers = 0;
    /* Write only slots in use: every write is a copy-on-write page fault in
       the child (all 4096 slots cost ~30 ms per fork).  Read only slots ever
       claimed: every read of a page never touched faults too. */
    for (w = 0; w < PE_THREADS_MAX / 64; w++) {
        uint64_t used = ever_used[w];
        for (; used; used &= used - 1) {
            i = w * 64 + __builtin_ctzll(used);
            if (slots[i].tid != self && (slots[i].tid || slots[i].tls)) {
                slots[i].tls = NULL;
                slots[i].tid = 0;
            }
        }
    }
}

int
pe_threads_create_small(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                        void *arg)
{
    pthread_attr_t big, small;
    size_t size, guard;
    int err, detach;

    if (!attr && pthread_attr_init(&small) == 0) {
        /* A thread of ours asking for the default (the sampler's collector) */
        pthread_attr_setstacksize(&small, PE_THREADS_STACK);
        err = pe_threads_create_small(thread, &small, start, arg);
        pthread_attr_destroy(&small);
        return err;
    }
    err = pe_real.pthread_create(thread, attr, start, arg);

    if (err != EINVAL || !attr || pthread_attr_getstacksize(attr, &size) != 0 ||
        pthread_attr_getdetachstate(attr, &detach) != 0 ||
        pthread_attr_getguardsize(attr, &guard) != 0)
        return err;
    while (err == EINVAL && size < (8u << 20)) {
        size *= 2;
        if (pthread_attr_init(&big) != 0)
            return err;
        pthread_attr_setdetachstate(&big, detach);
        pthread_attr_setguardsize(&big, guard);
        pthread_attr_setstacksize(&big, size);
        err = pe_real.pthread_create(thread, &big, start, arg);
        pthread_attr_destroy(&big);
    }
    return err;
}

int
pe_threads_start_internal(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t th;
    sigset_t all, old;
    int err;

    if (!pe_real.pthread_create)
        return -ENOSYS;
    /* A thread inherits its creator's mask: ours then never take the
       program's process-directed signals (SIGTERM for a sigwait thread...). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Not the default 8 MiB (RLIMIT_STACK): under `ulimit -v` every MiB of
       address space we take is the program's.  Ours run what civetweb's
       workers run on their 100 KiB (profiles, symbols, /proc walks). */
    pthread_attr_setstacksize(&attr, PE_THREADS_STACK);
    err = pe_threads_create_small(&th, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -err;
}

int
pe_threads_read_task(pid_t tid, const char *what, char *buf, size_t len)
{
    char path[64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, what);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return errno == ESRCH ? -ESRCH : -EIO;
    buf[n] = '\0';
    return (int)n;
}

int
pe_threads_name(pid_t tid, char *buf, size_t len)
{
    int n = pe_threads_read_task(tid, "comm", buf, len);

    if (n < 0) {
        snprintf(buf, len, "?");
        return n;
    }
    if (n > 0 && buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    return 0;
}

const char *
pe_threads_state(pid_t tid)
{
    char stat[512], *p;

    if (pe_threads_read_task(tid, "stat", stat, sizeof(stat)) < 0 || !(p = strrchr(stat, ')')) ||
        !p[1])
        return "unknown";
    return pe_threads_state_name(p[2]);
}

const char *
pe_threads_state_name(char c)
{
    switch (c) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk-sleep";
    case 'T': return "stopped";
    case 't': return "tracing-stop";
    case 'Z': return "zombie";
    case 'X': return "dead";
    case 'I': return "idle";
    default: return "unknown";
    }
}
