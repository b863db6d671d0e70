/*
 * p_mutex_sem: the answers of every interposed lock and wait call in the
 * corner cases, printed one per line, so that e2e_mutex_sem.sh can require
 * the same output with and without the library (and at PROFEP_MUTEX_RATE=1,
 * where every contended call takes the timed path).  Threads coordinate with
 * semaphores, which are not interposed.  Only main prints.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *
en(int e)
{
    static char buf[32];

    switch (e) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    case EPERM: return "EPERM";
    }
    snprintf(buf, sizeof(buf), "E%d", e);
    return buf;
}

#define SHOW(what, call) printf("%-44s %s\n", what, en(call))

static struct timespec
in_ms(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (ms % 1000) * 1000000L;
    ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

/* ---- a helper thread that holds a lock until told, or dies holding it --------------- */

enum { HOLD_MUTEX, HOLD_WRLOCK, HOLD_RDLOCK };

typedef struct holder_s {
    int what;
    void *obj;
    int die;      /* exit without unlocking (robust mutexes) */
    long hold_ms; /* > 0: release (or die) by itself after this long */
    sem_t locked, release;
    pthread_t th;
} holder_t;

static void *
holder_main(void *p)
{
    holder_t *h = p;

    if (h->what == HOLD_MUTEX)
        pthread_mutex_lock(h->obj);
    else if (h->what == HOLD_WRLOCK)
        pthread_rwlock_wrlock(h->obj);
    else
        pthread_rwlock_rdlock(h->obj);
    sem_post(&h->locked);
    if (h->hold_ms > 0)
        usleep((useconds_t)h->hold_ms * 1000);
    else
        sem_wait(&h->release);
    if (h->die)
        return NULL;
    if (h->what == HOLD_MUTEX)
        pthread_mutex_unlock(h->obj);
    else
        pthread_rwlock_unlock(h->obj);
    return NULL;
}

static void
hold(holder_t *h, int what, void *obj, int die, long hold_ms)
{
    memset(h, 0, sizeof(*h));
    h->what = what;
    h->obj = obj;
    h->die = die;
    h->hold_ms = hold_ms;
    sem_init(&h->locked, 0, 0);
    sem_init(&h->release, 0, 0);
    pthread_create(&h->th, NULL, holder_main, h);
    sem_wait(&h->locked);
}

static void
unhold(holder_t *h)
{
    if (h->hold_ms <= 0)
        sem_post(&h->release);
    pthread_join(h->th, NULL);
}

static void
init_mutex(pthread_mutex_t *m, int type, int robust, int protocol)
{
    pthread_mutexattr_t a;

    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    if (robust)
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (protocol >= 0)
        pthread_mutexattr_setprotocol(&a, protocol);
    if (protocol == PTHREAD_PRIO_PROTECT)
        pthread_mutexattr_setprioceiling(&a, 1);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

/* ---- cases ------------------------------------------------------------------------- */

static void
errorcheck(void)
{
    pthread_mutex_t m;
    struct timespec ts;
    holder_t h;

    init_mutex(&m, PTHREAD_MUTEX_ERRORCHECK, 0, -1);
    SHOW("errorcheck: lock", pthread_mutex_lock(&m));
    SHOW("errorcheck: relock by owner", pthread_mutex_lock(&m));
    SHOW("errorcheck: trylock by owner", pthread_mutex_trylock(&m));
    ts = in_ms(10);
    SHOW("errorcheck: timedlock by owner", pthread_mutex_timedlock(&m, &ts));
    SHOW("errorcheck: unlock", pthread_mutex_unlock(&m));
    SHOW("errorcheck: unlock again", pthread_mutex_unlock(&m));
    hold(&h, HOLD_MUTEX, &m, 0, 0);
    SHOW("errorcheck: trylock, held elsewhere", pthread_mutex_trylock(&m));
    ts = in_ms(30);
    SHOW("errorcheck: timedlock, held elsewhere", pthread_mutex_timedlock(&m, &ts));
    SHOW("errorcheck: unlock by non-owner", pthread_mutex_unlock(&m));
    unhold(&h);
    hold(&h, HOLD_MUTEX, &m, 0, 30);
    SHOW("errorcheck: lock, released after 30 ms", pthread_mutex_lock(&m));
    SHOW("errorcheck: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
    pthread_mutex_destroy(&m);
}

static void
recursive(void)
{
    pthread_mutex_t m;
    struct timespec ts = in_ms(10);
    holder_t h;

    init_mutex(&m, PTHREAD_MUTEX_RECURSIVE, 0, -1);
    SHOW("recursive: lock", pthread_mutex_lock(&m));
    SHOW("recursive: lock again", pthread_mutex_lock(&m));
    SHOW("recursive: trylock", pthread_mutex_trylock(&m));
    SHOW("recursive: timedlock", pthread_mutex_timedlock(&m, &ts));
    for (int i = 0; i < 4; i++)
        SHOW("recursive: unlock", pthread_mutex_unlock(&m));
    SHOW("recursive: unlock once too often", pthread_mutex_unlock(&m));
    hold(&h, HOLD_MUTEX, &m, 0, 30);
    SHOW("recursive: trylock, held elsewhere", pthread_mutex_trylock(&m));
    SHOW("recursive: lock, released after 30 ms", pthread_mutex_lock(&m));
    SHOW("recursive: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
    pthread_mutex_destroy(&m);
}

static void
robust(void)
{
    pthread_mutex_t m;
    struct timespec ts;
    holder_t h;

    init_mutex(&m, PTHREAD_MUTEX_NORMAL, 1, -1);
    hold(&h, HOLD_MUTEX, &m, 1, 0);
    unhold(&h); /* the owner is dead */
    SHOW("robust: lock, owner died", pthread_mutex_lock(&m));
    SHOW("robust: consistent", pthread_mutex_consistent(&m));
    SHOW("robust: unlock", pthread_mutex_unlock(&m));
    SHOW("robust: lock", pthread_mutex_lock(&m));
    SHOW("robust: unlock", pthread_mutex_unlock(&m));

    hold(&h, HOLD_MUTEX, &m, 1, 30); /* dies holding it while we wait */
    SHOW("robust: lock, owner dies while we wait", pthread_mutex_lock(&m));
    SHOW("robust: unlock without consistent", pthread_mutex_unlock(&m));
    unhold(&h);
    SHOW("robust: lock, not recoverable", pthread_mutex_lock(&m));
    pthread_mutex_destroy(&m);

    init_mutex(&m, PTHREAD_MUTEX_ERRORCHECK, 1, -1);
    hold(&h, HOLD_MUTEX, &m, 1, 30);
    ts = in_ms(2000);
    SHOW("robust errorcheck: timedlock, owner dies", pthread_mutex_timedlock(&m, &ts));
    SHOW("robust errorcheck: consistent", pthread_mutex_consistent(&m));
    SHOW("robust errorcheck: relock by owner", pthread_mutex_lock(&m));
    SHOW("robust errorcheck: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
    hold(&h, HOLD_MUTEX, &m, 1, 0);
    unhold(&h);
    SHOW("robust errorcheck: trylock, owner died", pthread_mutex_trylock(&m));
    SHOW("robust errorcheck: consistent", pthread_mutex_consistent(&m));
    SHOW("robust errorcheck: unlock", pthread_mutex_unlock(&m));
    pthread_mutex_destroy(&m);
}

static void
timed(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct timespec ts;
    holder_t h;

    ts = in_ms(0);
    ts.tv_nsec = -1;
    SHOW("normal: timedlock, free, bad abstime", pthread_mutex_timedlock(&m, &ts));
    SHOW("normal: unlock", pthread_mutex_unlock(&m));
    SHOW("normal: lock", pthread_mutex_lock(&m));
    ts = in_ms(30);
    SHOW("normal: timedlock by owner (self-deadlock)", pthread_mutex_timedlock(&m, &ts));
    SHOW("normal: unlock", pthread_mutex_unlock(&m));
    hold(&h, HOLD_MUTEX, &m, 0, 0);
    SHOW("normal: trylock, held elsewhere", pthread_mutex_trylock(&m));
    ts = in_ms(30);
    SHOW("normal: timedlock, held elsewhere", pthread_mutex_timedlock(&m, &ts));
    ts.tv_nsec = 1000000000L;
    SHOW("normal: timedlock, held elsewhere, bad abstime", pthread_mutex_timedlock(&m, &ts));
    unhold(&h);
    hold(&h, HOLD_MUTEX, &m, 0, 30);
    ts = in_ms(5000);
    SHOW("normal: timedlock, released after 30 ms", pthread_mutex_timedlock(&m, &ts));
    SHOW("normal: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
}

static void
protocols(void)
{
    pthread_mutex_t m;
    holder_t h;

    init_mutex(&m, PTHREAD_MUTEX_ERRORCHECK, 0, PTHREAD_PRIO_INHERIT);
    SHOW("prio-inherit: lock", pthread_mutex_lock(&m));
    SHOW("prio-inherit: relock by owner", pthread_mutex_lock(&m));
    SHOW("prio-inherit: unlock", pthread_mutex_unlock(&m));
    hold(&h, HOLD_MUTEX, &m, 0, 30);
    SHOW("prio-inherit: trylock, held elsewhere", pthread_mutex_trylock(&m));
    SHOW("prio-inherit: lock, released after 30 ms", pthread_mutex_lock(&m));
    SHOW("prio-inherit: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
    pthread_mutex_destroy(&m);

    init_mutex(&m, PTHREAD_MUTEX_NORMAL, 1, PTHREAD_PRIO_INHERIT);
    hold(&h, HOLD_MUTEX, &m, 1, 30);
    SHOW("robust prio-inherit: lock, owner dies", pthread_mutex_lock(&m));
    SHOW("robust prio-inherit: consistent", pthread_mutex_consistent(&m));
    SHOW("robust prio-inherit: unlock", pthread_mutex_unlock(&m));
    unhold(&h);
    pthread_mutex_destroy(&m);

    /* The ceiling is above SCHED_OTHER's 0; whatever glibc answers, it must answer it twice. */
    init_mutex(&m, PTHREAD_MUTEX_NORMAL, 0, PTHREAD_PRIO_PROTECT);
    {
        int rc = pthread_mutex_lock(&m);
        SHOW("prio-protect: lock", rc);
        if (rc == 0)
            SHOW("prio-protect: unlock", pthread_mutex_unlock(&m));
    }
    pthread_mutex_destroy(&m);
}

static void
rwlocks(void)
{
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    holder_t h;

    SHOW("rwlock: wrlock", pthread_rwlock_wrlock(&l));
    SHOW("rwlock: wrlock by writer", pthread_rwlock_wrlock(&l));
    SHOW("rwlock: rdlock by writer", pthread_rwlock_rdlock(&l));
    SHOW("rwlock: tryrdlock by writer", pthread_rwlock_tryrdlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    SHOW("rwlock: rdlock", pthread_rwlock_rdlock(&l));
    SHOW("rwlock: rdlock again", pthread_rwlock_rdlock(&l));
    SHOW("rwlock: trywrlock by reader", pthread_rwlock_trywrlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    hold(&h, HOLD_WRLOCK, &l, 0, 30);
    SHOW("rwlock: rdlock, writer releases after 30 ms", pthread_rwlock_rdlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    unhold(&h);
    hold(&h, HOLD_RDLOCK, &l, 0, 30);
    SHOW("rwlock: rdlock, shared with a reader", pthread_rwlock_rdlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    SHOW("rwlock: wrlock, reader releases after 30 ms", pthread_rwlock_wrlock(&l));
    SHOW("rwlock: unlock", pthread_rwlock_unlock(&l));
    unhold(&h);
    pthread_rwlock_destroy(&l);
}

/* ---- condition variables and cancellation ------------------------------------------ */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting;

static int cleanup_rc = -1;

static void
cleanup(void *m)
{
    cleanup_rc = pthread_mutex_unlock(m); /* main prints it after the join */
}

static void *
cancel_waiter(void *timed)
{
    struct timespec ts = in_ms(60000);

    pthread_mutex_lock(&cm);
    pthread_cleanup_push(cleanup, &cm);
    waiting = 1;
    for (;;) {
        if (timed)
            pthread_cond_timedwait(&cv, &cm, &ts);
        else
            pthread_cond_wait(&cv, &cm);
    }
    pthread_cleanup_pop(1);
    return NULL;
}

static void
cancel_in_wait(int timed)
{
    pthread_t t;
    void *ret;

    waiting = 0;
    pthread_create(&t, NULL, cancel_waiter, timed ? (void *)1 : NULL);
    /* Once we get the mutex with waiting set, the thread is inside the wait. */
    for (;;) {
        pthread_mutex_lock(&cm);
        int w = waiting;
        pthread_mutex_unlock(&cm);
        if (w)
            break;
        usleep(1000);
    }
    SHOW(timed ? "cancel: pthread_cancel in cond_timedwait" : "cancel: pthread_cancel in cond_wait",
         pthread_cancel(t));
    SHOW("cancel: join", pthread_join(t, &ret));
    SHOW("cancel: cleanup handler's unlock", cleanup_rc);
    cleanup_rc = -1;
    printf("%-44s %s\n", "cancel: thread result",
           ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "?");
    SHOW("cancel: mutex free again (trylock)", pthread_mutex_trylock(&cm));
    SHOW("cancel: unlock", pthread_mutex_unlock(&cm));
}

static void *
signaller(void *arg)
{
    usleep(20000);
    pthread_mutex_lock(&cm);
    waiting = 2;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cm);
    return NULL;
}

static void
conds(void)
{
    struct timespec ts;
    pthread_t t;
    int rc = 0;

    pthread_mutex_lock(&cm);
    ts = in_ms(20);
    SHOW("cond: timedwait times out", pthread_cond_timedwait(&cv, &cm, &ts));
    SHOW("cond: mutex held after the timeout (trylock)", pthread_mutex_trylock(&cm));
    ts.tv_nsec = -5;
    SHOW("cond: timedwait, bad abstime", pthread_cond_timedwait(&cv, &cm, &ts));
    waiting = 0;
    pthread_create(&t, NULL, signaller, NULL);
    while (waiting != 2 && rc == 0)
        rc = pthread_cond_wait(&cv, &cm);
    SHOW("cond: wait until signalled", rc);
    SHOW("cond: unlock", pthread_mutex_unlock(&cm));
    pthread_join(t, NULL);
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    errorcheck();
    recursive();
    robust();
    timed();
    protocols();
    rwlocks();
    conds();
    cancel_in_wait(0);
    cancel_in_wait(1);
    printf("done\n");
    return 0;
}
