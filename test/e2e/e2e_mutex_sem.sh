#!/usr/bin/env bash
# e2e_mutex_sem: the interposed lock and wait calls answer exactly as glibc's
# (p_mutex_sem prints every answer): error-checking, recursive, robust,
# priority-inheritance and -protect mutexes, timed locks, rwlocks, condition
# waits and cancellation inside them; without the library, with it at the
# default rate, at PROFEP_MUTEX_RATE=1 (every contended call timed and
# recorded) and =0, and for a program linked without -lpthread.  Then the
# default mutex, which the library takes inline (its own compare-and-swap,
# contention/mutex.h): glibc's bookkeeping (owner, user count: destroy's EBUSY),
# exact counts under a fight, condition-variable ping-pong, a process-shared
# mutex across fork, and the owner in a fork child.
source test/e2e/lib.sh
P=$BUILD/test

want=$($P/p_mutex_sem 2>&1); st=$?
check "p_mutex_sem runs alone (exit 0, ends with done)" bash -c "[ $st = 0 ] && [ \"\$(tail -n 1 <<<\"\$0\")\" = done ]" "$want"
for rate in '' 1 0; do
    got=$(env PROFEP_MUTEX_RATE=$rate PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $P/p_mutex_sem 2>/dev/null); gst=$?
    check "same answers and status with the library, PROFEP_MUTEX_RATE=${rate:-default}" \
        bash -c "[ \"\$0\" = \"\$1\" ] && [ $gst = 0 ] || diff <(echo \"\$0\") <(echo \"\$1\")" "$want" "$got"
done

# A program that never names libpthread (glibc >= 2.34 has it in libc).
if cc -std=gnu11 -O1 -g -o $T/p_mutex_sem_nolink test/progs/p_mutex_sem.c 2>$T/cc.err; then
    check "built without -lpthread: no libpthread in its NEEDED" \
        bash -c "! readelf -d $T/p_mutex_sem_nolink | grep -q 'libpthread'"
    got=$(PROFEP_MUTEX_RATE=1 PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $T/p_mutex_sem_nolink 2>/dev/null)
    check "built without -lpthread: same answers at PROFEP_MUTEX_RATE=1" [ "$got" = "$want" ]
else
    bad "could not build p_mutex_sem without -lpthread: $(head -n 3 $T/cc.err)"
fi

# ---- the default mutex, taken inline ------------------------------------------------
cat >$T/inline.c <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long counter;
static int turn;

static void *fight(void *arg)
{
    for (int i = 0; i < 200000; i++) {
        pthread_mutex_lock(&mu);
        counter++;
        pthread_mutex_unlock(&mu);
    }
    return arg;
}
static void *pong(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&mu);
        while (turn != 1)
            pthread_cond_wait(&cv, &mu);
        turn = 0;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    return arg;
}
static struct timespec in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}
int main(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, *sh;
    pthread_mutexattr_t a;
    struct timespec ts;
    pthread_t t[2];
    int st, rounds = 0;
    pid_t pid;

    for (int i = 0; i < 3; i++) { /* the first may take the thread's first-lock path */
        printf("lock %d", pthread_mutex_lock(&m));
        printf(" unlock %d\n", pthread_mutex_unlock(&m));
    }
    printf("lock %d\n", pthread_mutex_lock(&m));
    printf("owner is me %d users %u\n", m.__data.__owner == gettid(), m.__data.__nusers);
    printf("trylock EBUSY %d", pthread_mutex_trylock(&m) == EBUSY);
    printf(" destroy EBUSY %d\n", pthread_mutex_destroy(&m) == EBUSY);
    ts = in_ms(10);
    printf("timedlock by owner ETIMEDOUT %d\n", pthread_mutex_timedlock(&m, &ts) == ETIMEDOUT);
    printf("unlock %d", pthread_mutex_unlock(&m));
    printf(" users %u", m.__data.__nusers);
    printf(" destroy %d\n", pthread_mutex_destroy(&m));

    pthread_create(&t[0], NULL, fight, NULL);
    pthread_create(&t[1], NULL, fight, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    printf("counter %ld users %u\n", counter, mu.__data.__nusers);

    pthread_create(&t[0], NULL, pong, NULL);
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&mu);
        while (turn != 0)
            pthread_cond_wait(&cv, &mu);
        turn = 1;
        rounds++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    pthread_join(t[0], NULL);
    printf("ping-pong %d users %u", rounds, mu.__data.__nusers);
    printf(" destroy %d\n", pthread_mutex_destroy(&mu));

    /* The mutex and, after it, the child's word that its timed lock is over: the parent
       lets go only then, or a child scheduled late on a busy machine would take the mutex
       in its timed lock and deadlock on itself in the plain one. */
    sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    volatile int *timed_out = (volatile int *)(sh + 1);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(sh, &a);
    printf("shared: lock %d\n", pthread_mutex_lock(sh));
    fflush(stdout);
    if ((pid = fork()) == 0) {
        ts = in_ms(20);
        st = pthread_mutex_timedlock(sh, &ts) == ETIMEDOUT; /* the parent holds it */
        *timed_out = 1;
        st |= (pthread_mutex_lock(sh) == 0) << 1;            /* until it lets go */
        st |= (sh->__data.__owner == gettid()) << 2;         /* the child's own tid */
        st |= (pthread_mutex_unlock(sh) == 0) << 3;
        _exit(st);
    }
    while (!*timed_out)
        usleep(1000);
    usleep(50000); /* the child is (most likely) waiting in its plain lock */
    printf("shared: unlock %d\n", pthread_mutex_unlock(sh));
    waitpid(pid, &st, 0);
    printf("shared: child timed out, locked, owned, unlocked: %#x\n", WEXITSTATUS(st));
    printf("shared: lock %d", pthread_mutex_lock(sh));
    printf(" unlock %d", pthread_mutex_unlock(sh));
    printf(" destroy %d\n", pthread_mutex_destroy(sh));
    printf("done\n");
    return 0;
}
EOF
if cc -std=gnu11 -O1 -g -o $T/inline $T/inline.c -lpthread 2>$T/cc.err; then
    want=$(timeout 60 $T/inline 2>&1); st=$?
    check "default mutex program runs alone (exit 0, exact count, the child's steps, done)" \
        bash -c "[ $st = 0 ] && grep -qx 'counter 400000 users 0' <<<\"\$0\" &&
                 grep -qx 'shared: child timed out, locked, owned, unlocked: 0xf' <<<\"\$0\" &&
                 [ \"\$(tail -n 1 <<<\"\$0\")\" = done ]" "$want"
    for rate in '' 1 0; do
        got=$(timeout 60 env PROFEP_MUTEX_RATE=$rate PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $T/inline 2>/dev/null)
        gst=$?
        check "default mutex: same owner, users, answers and counts with the library, PROFEP_MUTEX_RATE=${rate:-default}" \
            bash -c "[ \"\$0\" = \"\$1\" ] && [ $gst = 0 ] || diff <(echo \"\$0\") <(echo \"\$1\")" "$want" "$got"
    done
else
    bad "could not build the default-mutex program: $(head -n 3 $T/cc.err)"
fi

pe_finish
