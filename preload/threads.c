/*
 * threads.c: the lock-free registry of threads (tid, ours or not, creation
 * stack).  Slots are claimed with a CAS on the tid, starting at a hash of it,
 * and released by storing 0; readers copy slots without any lock and tolerate
 * a slot changing under them (they re-check the tid).  A thread's name (read
 * through proc.h) and the start of the library's own threads live here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"
#include "proc.h"
#include "real.h"
#include "threads.h"

/*
 * The registry grows with the program: a chain of tables, the first of
 * PE_THREADS_FIRST slots in our data, each next one mapped when a claim finds
 * every table before it full, twice the size of the one before.  The first
 * is small (most programs have a few threads; under `ulimit -v` our data
 * counts against the program's address space).  Tables are never unmapped (readers,
 * signal handlers among them, walk the chain without a lock), so the
 * registry holds what the most threads alive at once needed: bounded by
 * memory, not by a constant.  A table that cannot be mapped leaves the
 * thread unregistered (still found through /proc/self/task).
 *
 * The first table is zeroes until used: a lookup that scanned all of it
 * touched every page (a page fault each, most of what loading the library
 * cost a short-lived program).  So lookups in a table go no further from a
 * tid's hash than the farthest any claim there ever went (raised before the
 * tid is stored, never lowered), and the fork child clears only slots ever
 * claimed.
 */
#define PE_THREADS_FIRST 256

typedef struct reg_s {
    struct reg_s *next; /* published with release once filled in */
    unsigned cap;       /* a power of two */
    unsigned probe_max;
    unsigned used;           /* slots claimed: a table half full is passed over */
    uint64_t *ever_used;     /* cap / 64 words */
    pe_thread_info_t *slots; /* cap */
} reg_t;

static pe_thread_info_t first_slots[PE_THREADS_FIRST];
static uint64_t first_used[PE_THREADS_FIRST / 64];
static reg_t first = {NULL, PE_THREADS_FIRST, 0, 0, first_used, first_slots};
/* Walks of the published pe_tls pointers in progress (pe_threads_each_tls). */
static int tls_walkers;

static unsigned
slot_hash(const reg_t *r, pid_t tid)
{
    return ((unsigned)tid * 2654435761u) & (r->cap - 1);
}

static pe_thread_info_t *
find_in(reg_t *r, pid_t tid)
{
    unsigned i, h = slot_hash(r, tid), n = __atomic_load_n(&r->probe_max, __ATOMIC_ACQUIRE);

    for (i = 0; i <= n && i < r->cap; i++) {
        pe_thread_info_t *s = &r->slots[(h + i) & (r->cap - 1)];
        if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == tid)
            return s;
    }
    return NULL;
}

static pe_thread_info_t *
find_slot(pid_t tid)
{
    pe_thread_info_t *s;

    for (reg_t *r = &first; r; r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE))
        if ((s = find_in(r, tid)))
            return s;
    return NULL;
}

/* Slot (h + i) of r is about to be claimed: let lookups reach it. */
static void
note_claim(reg_t *r, unsigned h, unsigned i)
{
    unsigned n = __atomic_load_n(&r->probe_max, __ATOMIC_RELAXED), k = (h + i) & (r->cap - 1);

    while (i > n && !__atomic_compare_exchange_n(&r->probe_max, &n, i, 0, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_RELAXED))
        ;
    if (!(__atomic_load_n(&r->ever_used[k / 64], __ATOMIC_RELAXED) & (1ull << (k % 64))))
        __atomic_fetch_or(&r->ever_used[k / 64], 1ull << (k % 64), __ATOMIC_SEQ_CST);
}

static pe_thread_info_t *
claim_in(reg_t *r, pid_t tid)
{
    unsigned i, h = slot_hash(r, tid);
    pe_thread_info_t *s;

    if (__atomic_load_n(&r->used, __ATOMIC_RELAXED) >= r->cap / 2)
        return NULL; /* short probes for lookups (the signal handler's too) */
    for (i = 0; i < r->cap; i++) {
        pid_t expected = 0;
        s = &r->slots[(h + i) & (r->cap - 1)];
        if (__atomic_load_n(&s->tid, __ATOMIC_RELAXED) != 0)
            continue;
        note_claim(r, h, i); /* before the CAS: the tid is stored only after it */
        if (__atomic_compare_exchange_n(&s->tid, &expected, -1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&r->used, 1, __ATOMIC_RELAXED);
            return s;
        }
    }
    return NULL;
}

/* A slot is given back: its table's count goes down. */
static void
note_release(const pe_thread_info_t *s)
{
    for (reg_t *r = &first; r; r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE))
        if (s >= r->slots && s < r->slots + r->cap) {
            __atomic_fetch_sub(&r->used, 1, __ATOMIC_RELAXED);
            return;
        }
}

/* The table after r, mapped now if there is none yet (NULL without memory). */
static reg_t *
next_table(reg_t *r)
{
    reg_t *n = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE), *expected = NULL;
    unsigned cap = r->cap * 2;
    size_t used = (size_t)cap / 64 * sizeof(uint64_t), len;
    char *m;

    if (n || cap > (1u << 30))
        return n;
    len = sizeof(reg_t) + used + (size_t)cap * sizeof(pe_thread_info_t);
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    n = (reg_t *)m;
    n->cap = cap;
    n->ever_used = (uint64_t *)(m + sizeof(reg_t));
    n->slots = (pe_thread_info_t *)(m + sizeof(reg_t) + used);
    if (!__atomic_compare_exchange_n(&r->next, &expected, n, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        munmap(m, len); /* another thread's is in place */
        return expected;
    }
    return n;
}

static pe_thread_info_t *
claim_slot(pid_t tid)
{
    pe_thread_info_t *s;

    if ((s = find_slot(tid)))
        return s; /* a recycled tid whose previous owner never unregistered */
    for (reg_t *r = &first; r; r = next_table(r))
        if ((s = claim_in(r, tid)))
            return s;
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
    note_release(s);
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
    for (reg_t *r = &first; r; r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE)) {
        for (unsigned i = 0; i < r->cap; i++) {
            pe_tls_t *t = __atomic_load_n(&r->slots[i].tls, __ATOMIC_SEQ_CST);
            if (t && !__atomic_load_n(&r->slots[i].internal, __ATOMIC_RELAXED))
                fn(t);
        }
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
pe_threads_list(pe_thread_info_t **out)
{
    pe_thread_info_t *v = NULL, *nv;
    int n = 0, cap = 0;

    for (reg_t *r = &first; r; r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE)) {
        for (unsigned i = 0; i < r->cap; i++) {
            pe_thread_info_t *s = &r->slots[i];
            pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
            if (tid <= 0 || s->internal)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                if (!(nv = realloc(v, (size_t)cap * sizeof(*v)))) {
                    free(v);
                    *out = NULL;
                    return -ENOMEM;
                }
                v = nv;
            }
            v[n] = *s;
            if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) != tid)
                continue; /* reused while we copied */
            v[n].tid = tid;
            n++;
        }
    }
    *out = v;
    return n;
}

int
pe_threads_count(int upto)
{
    int n = 0;

    for (reg_t *r = &first; r && n < upto; r = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE))
        for (unsigned i = 0; i < r->cap && n < upto; i++) {
            pe_thread_info_t *s = &r->slots[i];

            if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) > 0 && !s->internal)
                n++;
        }
    return n;
}

void
pe_threads_atfork_child(void)
{
    pid_t self = (pid_t)0;
    int w;

    pe_tls.tid = 0;
    self = pe_gettid();
    tls_walkers = 0;
    /* Write only slots in use: every write is a copy-on-write page fault in
       the child (all 4096 slots cost ~30 ms per fork).  Read only slots ever
       claimed: every read of a page never touched faults too. */
    for (reg_t *r = &first; r; r = r->next) {
        for (w = 0; w < (int)(r->cap / 64); w++) {
            uint64_t used = r->ever_used[w];
            for (; used; used &= used - 1) {
                pe_thread_info_t *s = &r->slots[w * 64 + __builtin_ctzll(used)];
                if (s->tid != self && (s->tid || s->tls)) {
                    r->used -= s->tid != 0;
                    s->tls = NULL;
                    s->tid = 0;
                }
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
pe_threads_name(pid_t tid, char *buf, size_t len)
{
    int n = pe_proc_task_read(tid, "comm", buf, len);

    if (n < 0) {
        snprintf(buf, len, "?");
        return n;
    }
    if (n > 0 && buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    return 0;
}
