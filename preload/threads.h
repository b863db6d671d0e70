/*
 * threads.h: the registry of threads, fed by the pthread_create interposer
 * (preload/process_hooks.c) and by the library's own threads.
 *
 * Each slot holds a tid, whether the thread is ours, and the stack that created
 * it (/debug/pprof/threadcreate).  Slots are claimed and released with atomics,
 * so the registry never takes a lock; it grows with the program (a chain of
 * tables, threads.c), and a thread it has no memory for goes unregistered
 * (still sampled via /proc/self/task).
 *
 * Signal-safe: pe_threads_is_internal only.
 */
#ifndef PE_THREADS_H
#define PE_THREADS_H

#include <sys/types.h>

#include "guard.h"
#include "pe.h"

#define PE_THREADS_CREATE_FRAMES 32
/* The stack of each thread the library starts itself (civetweb's: 100 KiB). */
#define PE_THREADS_STACK (128u << 10)

typedef struct pe_thread_info_s {
    pid_t tid;
    int internal;
    pe_tls_t *tls; /* published by the thread itself (pe_threads_publish_tls) */
    int ncreate;
    uintptr_t create_pcs[PE_THREADS_CREATE_FRAMES]; /* return addresses, leaf first */
} pe_thread_info_t;

/* Called on a new thread, first thing (records tid; creation stack from creator). */
void pe_threads_register(const uintptr_t *create_pcs, int ncreate);
/* Called by our own threads at start: never sampled or timed. */
void pe_threads_mark_internal(void);
/* Called when a registered thread exits. */
void pe_threads_unregister(void);
/*
 * Make this (registered) thread's pe_tls reachable by pe_threads_each_tls.
 * Only for threads that will call pe_threads_unregister before they exit
 * (or never exit before the process): another thread may store to it.
 */
void pe_threads_publish_tls(void);
/*
 * Call fn on the pe_tls of every published thread that is not the library's.
 * A thread cannot finish exiting meanwhile: pe_threads_unregister waits for
 * the walk to end (fn must be short and must not wait on other threads).
 */
void pe_threads_each_tls(void (*fn)(pe_tls_t *t));
/* 1 if tid is one of the library's threads. */
PE_SIGSAFE int pe_threads_is_internal(pid_t tid);
/*
 * Copy the live registered threads into a malloc'd array (*out; free() it);
 * returns the count, or -ENOMEM.  Internal threads are skipped.
 */
int pe_threads_list(pe_thread_info_t **out);
/* How many live registered threads are not the library's, counted up to
   `upto` at most (allocation-free: the hooks ask it). */
int pe_threads_count(int upto);
/* In a fork child: forget every thread but the caller. */
void pe_threads_atfork_child(void);
/*
 * Start one of the library's threads, detached, with every signal blocked
 * (through the real pthread_create: not registered, not sampled; fn marks
 * itself internal).  0, or -errno (-ENOSYS before pe_real is resolved).
 */
int pe_threads_start_internal(void *(*fn)(void *), void *arg);
/*
 * The real pthread_create for a thread of ours whose creator asks for a small
 * stack (civetweb: 100 KiB; tree.c: 64 KiB).  glibc refuses one smaller than
 * the program's static TLS plus a minimum (EINVAL), and a program with big
 * __thread arrays has a big one: then the stack is doubled until it fits
 * (up to 8 MiB).  Detach state and guard size are kept.  No attr: a joinable
 * thread on PE_THREADS_STACK.
 */
int pe_threads_create_small(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                            void *arg);
/* Read /proc/self/task/<tid>/comm into buf (NUL-terminated, newline stripped). */
int pe_threads_name(pid_t tid, char *buf, size_t len);

#endif /* PE_THREADS_H */
