/*
 * history.c: the heap over time, kept by one thread of ours (pe-heap-hist),
 * never by the malloc path: every second the sampled live total, RSS,
 * glibc's arena figures and the thread count into a ring of an hour (the
 * timeline); every PROFEP_HEAP_CHECKPOINT s a copy of the per-stack live
 * totals (the last PE_HEAP_CHECKPOINTS kept); and a copy of the per-stack
 * live totals when the sampled live total passes its highest so far (the peak).
 *
 * Memory: the timeline is a fixed map of PE_HEAP_TIMELINE entries; a
 * checkpoint or the peak holds one 24-byte entry per stack with live bytes,
 * at most the stack table's size, so at most (PE_HEAP_CHECKPOINTS + 2) x
 * 24 B x 32768 = 46 MiB in the worst case (docs/GUIDE.md "Memory over time").
 *
 * Signal-safe: no; readers (HTTP threads) and the thread share one mutex,
 * held only to swap or copy arrays.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/proc.h"
#include "../preload/real.h"
#include "../preload/threads.h"
#include "heap_int.h"

typedef struct checkpoint_s {
    int64_t t_ns; /* CLOCK_REALTIME when taken */
    int n;
    pe_heap_ck_ent_t *v; /* malloc'd, ascending stack */
} checkpoint_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static checkpoint_t cks[PE_HEAP_CHECKPOINTS]; /* ring: cks[(ck_next - 1) % N] is the newest */
static unsigned ck_next, ck_count;
static checkpoint_t peak;
static uint64_t peak_bytes; /* sampled live bytes at the peak */
static pe_heap_tl_t *tl;    /* ring of PE_HEAP_TIMELINE seconds */
static unsigned tl_next, tl_count;
static int running;
/* pe_heap_hist_stop (a process that must be alone): the thread leaves at its
   next tick, woken early by hist_wake. */
static int hist_stop;
static int hist_live; /* the thread is started and has not left */
static sem_t hist_wake;

/* The per-stack live totals now (entries with live objects or bytes only)
   and their sum. */
static int
take(checkpoint_t *ck, uint64_t *total_bytes)
{
    pe_heap_rec_t *r;
    int n, k = 0;
    uint64_t sum = 0;

    memset(ck, 0, sizeof(*ck));
    *total_bytes = 0;
    if (pe_heap_snapshot(&r, &n) < 0)
        return -ENOMEM;
    ck->v = malloc((size_t)(n ? n : 1) * sizeof(*ck->v));
    if (!ck->v) {
        free(r);
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (!r[i].inuse_cnt_fx && !r[i].inuse_bytes_fx)
            continue;
        ck->v[k].stack = r[i].stack;
        ck->v[k].pad = 0;
        ck->v[k].cnt_fx = (int64_t)r[i].inuse_cnt_fx;
        ck->v[k].bytes_fx = (int64_t)r[i].inuse_bytes_fx;
        sum += r[i].inuse_bytes_fx;
        k++;
    }
    free(r);
    ck->n = k;
    ck->t_ns = pe_clock_ns(CLOCK_REALTIME);
    *total_bytes = sum / PE_HEAP_BYTES_ONE;
    return 0;
}

/* ---- one second's figures ------------------------------------------------------ */

static uint32_t
thread_count(void)
{
    long n = pe_proc_self_threads();

    return n > 0 ? (uint32_t)n : 0;
}

/* glibc's arena figures.  mallinfo2 takes every arena's lock in turn and
   walks its free lists, holding the program's mallocs meanwhile: 11 ms a
   call once a dump of 30,000 threads left its chunks free.  So it is called
   from this thread only, and less often the longer it takes (about 0.2% of
   the time, once a minute at the least); between calls the last figures
   stand.  Resolved past ourselves; absent (older glibc, another allocator): 0s. */
static void
arena_figures(pe_heap_tl_t *e)
{
    static struct mallinfo2 (*mi2)(void);
    static int resolved;
    static struct mallinfo2 last;
    static int64_t next_ns;
    int64_t t0, took, gap;

    if (!resolved) {
        mi2 = (struct mallinfo2(*)(void))dlsym(RTLD_NEXT, "mallinfo2");
        resolved = 1;
    }
    e->have_arena = mi2 != NULL;
    if (!mi2)
        return;
    t0 = pe_clock_ns(CLOCK_MONOTONIC);
    if (t0 >= next_ns) {
        last = mi2();
        took = pe_clock_ns(CLOCK_MONOTONIC) - t0;
        gap = took * 500;
        if (gap > 60 * 1000000000LL)
            gap = 60 * 1000000000LL;
        next_ns = t0 + gap;
    }
    e->mi_inuse = last.uordblks;
    e->mi_free = last.fordblks;
    e->mi_mmap = last.hblkhd;
}

/* ---- the thread ------------------------------------------------------------------ */

static void
keep_peak(checkpoint_t *ck, uint64_t total)
{
    checkpoint_t old;

    pthread_mutex_lock(&lock);
    old = peak;
    peak = *ck;
    peak_bytes = total;
    pthread_mutex_unlock(&lock);
    free(old.v);
    ck->v = NULL;
}

static void
keep_checkpoint(checkpoint_t *ck)
{
    checkpoint_t old;

    pthread_mutex_lock(&lock);
    old = cks[ck_next % PE_HEAP_CHECKPOINTS];
    cks[ck_next % PE_HEAP_CHECKPOINTS] = *ck;
    ck_next++;
    if (ck_count < PE_HEAP_CHECKPOINTS)
        ck_count++;
    pthread_mutex_unlock(&lock);
    free(old.v);
    ck->v = NULL;
}

static void
tick(int checkpoint_due)
{
    pe_heap_tl_t e;
    checkpoint_t ck;
    uint64_t total = 0;

    memset(&e, 0, sizeof(e));
    if (take(&ck, &total) == 0) {
        if (total > __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED) || !peak.v) {
            if (checkpoint_due) { /* the same figures serve both: copy them */
                checkpoint_t cp = ck;

                cp.v = malloc((size_t)(ck.n ? ck.n : 1) * sizeof(*cp.v));
                if (cp.v) {
                    memcpy(cp.v, ck.v, (size_t)ck.n * sizeof(*cp.v));
                    keep_peak(&cp, total);
                }
            } else {
                keep_peak(&ck, total);
            }
        }
        if (checkpoint_due && ck.v)
            keep_checkpoint(&ck);
        free(ck.v);
    }
    e.t_ms = pe_clock_ns(CLOCK_REALTIME) / 1000000;
    e.heap = total;
    e.rss = pe_proc_self_rss();
    e.threads = thread_count();
    arena_figures(&e);
    pthread_mutex_lock(&lock);
    tl[tl_next % PE_HEAP_TIMELINE] = e;
    tl_next++;
    if (tl_count < PE_HEAP_TIMELINE)
        tl_count++;
    pthread_mutex_unlock(&lock);
}

static void *
hist_main(void *unused)
{
    sigset_t all;
    struct timespec next;
    int64_t every = (int64_t)pe_cfg.ckpt_seconds, since_ck = 0;

    (void)unused;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pe_threads_mark_internal();
    prctl(PR_SET_NAME, "pe-heap-hist", 0, 0, 0);
    if (every < 1)
        every = 60;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!__atomic_load_n(&hist_stop, __ATOMIC_ACQUIRE)) {
        /* Checkpoint at start (a base for since= at once), then every `every` s. */
        tick(since_ck == 0);
        if (++since_ck >= every)
            since_ck = 0;
        next.tv_sec++;
        while (sem_clockwait(&hist_wake, CLOCK_MONOTONIC, &next) < 0 && errno == EINTR)
            ;
    }
    __atomic_store_n(&hist_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

int
pe_heap_hist_start(void)
{
    int err;

    if (__atomic_load_n(&running, __ATOMIC_ACQUIRE))
        return 0;
    if (!tl && !(tl = pe_heap_map(PE_HEAP_TIMELINE * sizeof(*tl))))
        return -ENOMEM;
    sem_init(&hist_wake, 0, 0);
    __atomic_store_n(&hist_live, 1, __ATOMIC_RELEASE);
    if ((err = pe_threads_start_internal(hist_main, NULL)) < 0) {
        __atomic_store_n(&hist_live, 0, __ATOMIC_RELEASE);
        return err;
    }
    __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
    return 0;
}

void
pe_heap_hist_stop(void)
{
    __atomic_store_n(&hist_stop, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&running, __ATOMIC_ACQUIRE))
        sem_post(&hist_wake);
    pe_clock_wait_cleared(&hist_live, 5000);
}

void
pe_heap_hist_rejoin(void)
{
    if (__atomic_load_n(&hist_live, __ATOMIC_ACQUIRE))
        return; /* still leaving: it stays stopped */
    __atomic_store_n(&hist_stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
}

int
pe_heap_hist_running(void)
{
    return __atomic_load_n(&running, __ATOMIC_ACQUIRE);
}

/* ---- readers ---------------------------------------------------------------------- */

static int
copy_ck(const checkpoint_t *ck, pe_heap_ck_ent_t **out, int *n)
{
    *out = malloc((size_t)(ck->n ? ck->n : 1) * sizeof(**out));
    if (!*out)
        return -ENOMEM;
    memcpy(*out, ck->v, (size_t)ck->n * sizeof(**out));
    *n = ck->n;
    return 0;
}

int
pe_heap_hist_since(double ago, pe_heap_ck_ent_t **out, int *n, int64_t *taken_ns)
{
    int64_t want = pe_clock_ns(CLOCK_REALTIME) - (int64_t)(ago * 1e9), best_d = INT64_MAX;
    checkpoint_t now, *best = NULL;
    pe_heap_ck_ent_t *then = NULL, *v;
    uint64_t total;
    int nthen = 0, rc = 0, k = 0;

    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < ck_count; i++) {
        checkpoint_t *c = &cks[(ck_next - 1 - i) % PE_HEAP_CHECKPOINTS];
        int64_t d = c->t_ns > want ? c->t_ns - want : want - c->t_ns;

        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    if (!best)
        rc = -ENOENT;
    else if ((rc = copy_ck(best, &then, &nthen)) == 0)
        *taken_ns = best->t_ns;
    pthread_mutex_unlock(&lock);
    if (rc)
        return rc;
    if ((rc = take(&now, &total)) < 0) {
        free(then);
        return rc;
    }
    /* now - then, merged by ascending stack id */
    v = malloc((size_t)(now.n + nthen + 1) * sizeof(*v));
    if (!v) {
        free(then);
        free(now.v);
        return -ENOMEM;
    }
    for (int i = 0, j = 0; i < now.n || j < nthen;) {
        if (j >= nthen || (i < now.n && now.v[i].stack < then[j].stack)) {
            v[k++] = now.v[i++];
        } else if (i >= now.n || then[j].stack < now.v[i].stack) {
            v[k] = then[j++];
            v[k].cnt_fx = -v[k].cnt_fx;
            v[k].bytes_fx = -v[k].bytes_fx;
            k++;
        } else {
            v[k] = now.v[i++];
            v[k].cnt_fx -= then[j].cnt_fx;
            v[k].bytes_fx -= then[j++].bytes_fx;
            k++;
        }
    }
    free(then);
    free(now.v);
    *out = v;
    *n = k;
    return 0;
}

int
pe_heap_hist_peak(pe_heap_ck_ent_t **out, int *n, int64_t *when_ns, uint64_t *bytes)
{
    int rc = -ENOENT;

    pthread_mutex_lock(&lock);
    if (peak.v) {
        rc = copy_ck(&peak, out, n);
        *when_ns = peak.t_ns;
        *bytes = peak_bytes;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int
pe_heap_hist_timeline(pe_heap_tl_t **out, int *n)
{
    int rc = 0;

    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&lock);
    if (tl_count) {
        *out = malloc(tl_count * sizeof(**out));
        if (!*out) {
            rc = -ENOMEM;
        } else {
            for (unsigned i = 0; i < tl_count; i++)
                (*out)[i] = tl[(tl_next - tl_count + i) % PE_HEAP_TIMELINE];
            *n = (int)tl_count;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

uint64_t
pe_heap_hist_bytes(void)
{
    uint64_t b = PE_HEAP_TIMELINE * sizeof(pe_heap_tl_t);

    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < ck_count; i++)
        b += (uint64_t)cks[i].n * sizeof(pe_heap_ck_ent_t);
    b += (uint64_t)peak.n * sizeof(pe_heap_ck_ent_t);
    pthread_mutex_unlock(&lock);
    return b;
}

uint64_t
pe_heap_hist_checkpoints(void)
{
    return __atomic_load_n(&ck_count, __ATOMIC_RELAXED);
}

void
pe_heap_history_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* The history thread did not survive the fork; a request of a tree
       member must not wait on a lock it held at that moment. */
    memcpy(&lock, &fresh, sizeof(lock));
    hist_live = 0;
}
