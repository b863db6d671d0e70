/*
 * events.h: the process events and their one owner.  Fork (prepare, parent,
 * child), exec (before, failed), spawn (posix_spawn, system, popen: begin,
 * end), thread start and thread exit each enter here once, from the
 * interposers (process_hooks.c) or from pthread_atfork, and this file calls every
 * module's hook in a fixed order (events.c lists it).  No module hooks itself
 * into a process event any other way.
 *
 * "Foreign": the calling process is not the one the library's state belongs
 * to: a vfork child (it shares our memory and our thread's TLS until it execs
 * or exits), or a child of a raw clone/_Fork that ran no fork handler.  There
 * the hooks only change what is the child's own (its signal dispositions) and
 * never write a shared table.
 *
 * Signal-safe: pe_event_foreign; pe_event_fork_child only in a child of _Fork
 * (it takes no lock that a vanished thread could hold).
 */
#ifndef PE_EVENTS_H
#define PE_EVENTS_H

#include "pe.h"

/* Constructor, before any thread of ours exists: owner pid, thread-exit key, fork handlers. */
void pe_event_init(void);
/* 1 when this process is not the owner of the library's state (see above). */
PE_SIGSAFE int pe_event_foreign(void);

/*
 * In a fork child, before anything else: our state as a dormant child's.  The
 * fork handlers call it; so does the _Fork interposer (glibc's _Fork runs no
 * fork handlers).
 */
void pe_event_fork_child(void);

/* First thing on every application thread made through pthread_create (active library). */
void pe_event_thread_start(void);

/*
 * exec: `before` right before the real exec call; `failed` when it returned.
 * Between them no signal of ours is sent to any thread, none is pending on
 * this one, this thread has no timer, and every signal the program ignores
 * is ignored in the kernel (so it stays ignored in the new image).
 */
typedef struct pe_event_exec_s {
    int foreign;
    int aside;     /* the process stepped aside: nothing of ours to do, no system call */
    int tokens[2]; /* what the modules changed in a foreign child, to undo */
} pe_event_exec_t;
void pe_event_exec_before(pe_event_exec_t *x);
void pe_event_exec_failed(pe_event_exec_t *x);

/*
 * spawn (posix_spawn, posix_spawnp, system, popen): glibc's spawn child
 * resets every handled signal to SIG_DFL and execs with its internal execve,
 * so for the duration of the call the signals the program ignores are ignored
 * in the kernel too (one signal of ours, e.g. the peek under nohup, is then
 * not seen while a system() runs).  Nested and concurrent calls share it.
 */
void pe_event_spawn_begin(void);
void pe_event_spawn_end(void);

/*
 * A process that must be alone (alone.c): before a call that needs a
 * single thread or installs a seccomp filter, or a look at the program's own
 * thread list, its hooks step aside (every thread of ours stopped and gone
 * from /proc/self/task, timers deleted, signals given back, sampling off, for
 * good; one line from a root).  pe_alone_dormant_at_load:
 * constructor; 1 when the process started under a seccomp filter and
 * PROFEP_SECCOMP does not say serve (it said so in one line).
 */
int pe_alone_dormant_at_load(void);
/* 1 once this process stepped aside (or started dormant under a filter). */
int pe_alone_aside(void);
/*
 * `profep detach` (preload/attach.c): the same step aside, silent, from a
 * thread of ours; 1 when something of ours was running, else 0.
 * pe_alone_rejoin undoes it (each module's rejoin) for a later attach.
 */
int pe_alone_detach(void);
void pe_alone_rejoin(void);

#endif /* PE_EVENTS_H */
