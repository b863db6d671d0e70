/*
 * events.c: the one fan-out of process events (events.h): which module hears
 * of a fork, exec, spawn, thread start or exit, and in which order.  Owns the
 * owner pid (foreign-child detection), the thread-exit key and the fork
 * handlers.  Fork reaches us through pthread_atfork rather than a fork()
 * interposer because glibc forks internally too (daemon, forkpty) and only
 * its fork handlers see every fork; vfork runs none, which is what the
 * foreign check in the exec path is for.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../http/http.h"
#include "../sampler/allstacks.h"
#include "../sampler/peek.h"
#include "../sampler/sampler.h"
#include "../stack/unwind.h"
#include "../trace/feed.h"
#include "clock.h"
#include "events.h"
#include "fd.h"
#include "guard.h"
#include "init.h"
#include "loadgate.h"
#include "threads.h"
#include "tree.h"

static pid_t owner_pid;        /* the process our state belongs to (constructor, fork child) */
static pthread_key_t exit_key; /* its destructor is the thread-exit event */
static int exit_key_ok;
static PE_TLS sigset_t fork_mask; /* the forking thread's mask, restored after fork */
static PE_TLS int fork_masked;    /* fork_mask holds it (prepare ran) */

PE_SIGSAFE int
pe_event_foreign(void)
{
    pid_t owner = __atomic_load_n(&owner_pid, __ATOMIC_RELAXED);

    return owner && (pid_t)syscall(SYS_getpid) != owner;
}

/* ---- threads --------------------------------------------------------------------- */

static void
thread_exit(void *unused)
{
    pe_sampler_thread_exiting(); /* its timer first: it must not fire on a gone tid */
    pe_threads_unregister();
    pe_stripe_release();
}

void
pe_event_thread_start(void)
{
    pe_unwind_prime_thread(); /* before any sampler may unwind this thread */
    /* The key was created in the constructor, so its index is low and
       pthread_setspecific never allocates. */
    if (exit_key_ok && pthread_setspecific(exit_key, (void *)1) == 0)
        pe_threads_publish_tls(); /* it will unregister before its TLS goes */
    /* a raw clone child's copy of our state arms nothing */
    if (!pe_event_foreign())
        pe_sampler_thread_started();
}

/* ---- fork ------------------------------------------------------------------------ */

/* Registered first, so glibc runs it last among the prepare handlers, right
   before the fork itself. */
static void
fork_prepare(void)
{
    pe_http_fork_prepare(); /* no libunwind init lock held across the fork */
    pe_loadgate_close();    /* nor the loader's dl_iterate_phdr lock (loadgate.h) */
    pe_sampler_before_fork(&fork_mask);
    fork_masked = 1;
}

static void
fork_parent(void)
{
    pe_loadgate_open(0);
    pe_http_fork_parent();
    PE_TRACE_EVENT(PE_TJ_EV_FORK, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
    fork_masked = 0;
    pe_sampler_after_fork(0, &fork_mask);
}

/* The first child handler: our state is reset before the program's run. */
static void
fork_child(void)
{
    pe_event_fork_child();
}

void
pe_event_fork_child(void)
{
    sigset_t cur;
    int lives;

    __atomic_store_n(&owner_pid, (pid_t)syscall(SYS_getpid), __ATOMIC_RELAXED);
    pe_fd_gate_atfork_child(); /* first: the modules below may close */
    /* Our threads did not survive the fork.  In a process tree (tree.h) the
       child stays active, keeps sampling its heap and starts its own server
       at its first blocking call once it has lived a little; otherwise it is
       dormant.  Either way it starts no thread here, and whatever another
       thread held at the fork (unwinder pins, spin locks, in-flight
       counters, our locks) is let go. */
    pe_loadgate_open(1);
    lives = pe_tree_atfork_child(pe_init_active());
    pe_threads_atfork_child(); /* first of the modules: it resets the cached tid */
    pe_trace_atfork_child();
    pe_unwind_atfork_child();
    pe_heap_atfork_child(lives);
    pe_stacks_atfork_child();
    pe_peek_atfork_child();
    pe_http_atfork_child();
    if (!lives)
        pe_init_go_dormant();
    /* last: it unblocks the signal (after _Fork, which ran no prepare, the
       mask stays as it is) */
    if (!fork_masked)
        pthread_sigmask(SIG_SETMASK, NULL, &cur);
    pe_sampler_after_fork(1, fork_masked ? &fork_mask : &cur);
    fork_masked = 0;
}

void
pe_event_init(void)
{
    __atomic_store_n(&owner_pid, (pid_t)syscall(SYS_getpid), __ATOMIC_RELAXED);
    if (pthread_key_create(&exit_key, thread_exit) == 0)
        exit_key_ok = 1;
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- exec and spawn ---------------------------------------------------------------- */

void
pe_event_exec_before(pe_event_exec_t *x)
{
    x->foreign = pe_event_foreign();
    if ((x->aside = pe_alone_aside())) /* a filter may forbid what these would call */
        return;
    PE_TRACE_EXEC(0, x->foreign, 0);
    x->tokens[0] = pe_sampler_before_exec(x->foreign);
    x->tokens[1] = pe_peek_handon_begin(x->foreign);
}

void
pe_event_exec_failed(pe_event_exec_t *x)
{
    if (x->aside)
        return;
    PE_TRACE_EXEC(1, x->foreign, errno);
    pe_peek_handon_end(x->foreign, x->tokens[1]);
    pe_sampler_after_exec_failed(x->foreign, x->tokens[0]);
}

void
pe_event_spawn_begin(void)
{
    if (pe_alone_aside() || pe_event_foreign())
        return;
    pe_sampler_spawn_begin();
    pe_peek_handon_begin(0);
    PE_TRACE_EVENT(PE_TJ_EV_SPAWN, pe_clock_ns(CLOCK_MONOTONIC), 0, 0, NULL);
}

void
pe_event_spawn_end(void)
{
    if (pe_alone_aside() || pe_event_foreign())
        return;
    pe_peek_handon_end(0, 0);
    pe_sampler_spawn_end();
}
