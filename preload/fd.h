/*
 * fd.h: the library's own descriptors, kept out of the program's way
 * (preload/fd_hooks.c).
 *
 * Every descriptor created by our code (a thread of ours, or our unwinder on
 * any thread) through socket, accept, pipe or pipe2 is moved at once to the
 * highest free number below 1024, or below a smaller RLIMIT_NOFILE
 * (F_DUPFD_CLOEXEC probed from the top down: the program's low numbers stay
 * free), marked close-on-exec and registered.  Held for good: 6 at most
 * (libunwind's memory-check pipes, one per flavour of its code, the second
 * opened at the first stack capture; the listening socket; the process
 * tree's socket), plus one per request being answered.  The program's close, close_range and
 * closefrom leave registered descriptors open (a close of one "succeeds");
 * its dup2/dup3 onto one first moves ours to another number and then goes
 * through, and our code keeps using the old number: calls made from our code
 * on a moved descriptor are translated (poll, accept, read, write, recv, send,
 * shutdown, setsockopt, getsockopt, getsockname, getpeername, fcntl64,
 * close).  A registered descriptor found closed or replaced behind our back
 * (a raw close syscall) is dropped: our code gets EBADF on it, never the
 * program's descriptor; a listening socket lost so says it in one line.
 *
 * Signal-safe: pe_fd_* below are not, except where marked; the interposers
 * are (our unwinder reads and writes its pipe in a signal handler).
 */
#ifndef PE_FD_H
#define PE_FD_H

#include "pe.h"

/* In a fork child: close our sockets (no server runs there), keep the
   unwinder's pipe (the child may still unwind); the child's own view. */
void pe_fd_atfork_child(void);

/* Record what fd 2 is now (the constructor: "at load"); first call wins. */
void pe_fd_note_stderr(void);
/* 1 if fd 2 is still the file it was at load: lines written later from our
   threads go there only then, never into a file the program put in its place. */
int pe_fd_stderr_same(void);

/*
 * Our code replaces our descriptor fd (the number it holds) by a copy of
 * `with` (also ours), under the same number, close-on-exec: a tree member
 * that becomes the root listens on the root's port where civetweb polls
 * (http/server.c).  `with` stays open, the caller's to close.  0 or -errno.
 */
int pe_fd_replace(int fd, int with);

/*
 * Held in bulk: descriptors of ours too many for the table and that our code
 * reaches only by their number (sampler/engine_perf.c's perf events, one a
 * thread and CPU, and its eventfd).  They are not moved (the caller places
 * them), and nothing translates calls on them; the program's close,
 * close_range and closefrom leave them open (a close of one "succeeds"), its
 * dup2/dup3 onto one gets what it asked for: ours is closed by it, the number
 * forgotten and counted (pe_fd_bulk_take, from the hooks), and our code never
 * touches that number again.  Each is checked against /proc before it is
 * used (an anonymous perf event or eventfd still there: a raw close system
 * call and a reuse by the program are seen so, not counted).
 * hold: 0 or -errno (not held: unguarded).  close: our code's close of a held
 * one (the bit cleared; not closed when the number is no longer ours: -EBADF;
 * -ENOENT when nothing was ever held: the caller checks for itself).
 */
int pe_fd_bulk_hold(int fd);
int pe_fd_bulk_close(int fd);
/* Our code's call fn(fd, arg) on a held descriptor, made only while the
   number is still ours; a program's dup2/dup3 onto it waits until it returns,
   so fn must be quick and never block (close, ioctl, an eventfd's read or
   write).  fn's result, or -EBADF when the number is not ours any more. */
int pe_fd_bulk_call(int fd, int (*fn)(int fd, void *arg), void *arg);
/* 1 while fd's bit is set (no /proc check: for a poll set, where a stale one costs a wake-up). */
PE_SIGSAFE int pe_fd_bulk_held(int fd);
/* The program's dup2/dup3 is about to replace fd (the hooks): forget it if
   held, count it, wait for a pe_fd_bulk_call under way. */
PE_SIGSAFE void pe_fd_bulk_take(int fd);
/* Held numbers the program's dup2/dup3 took since the start. */
uint64_t pe_fd_bulk_taken(void);
/* Fork child: no call of the parent's threads is under way here. */
void pe_fd_bulk_atfork_child(void);
/* 1 if fd is held in bulk and still ours (a stale bit is cleared). */
PE_SIGSAFE int pe_fd_bulk_is(int fd);
/* The lowest held descriptor in [from, last] still ours, or -1. */
PE_SIGSAFE int pe_fd_bulk_next(unsigned from, unsigned last);

/*
 * Born low: a descriptor our code creates takes the lowest free number, in
 * the program's range, until it is moved up or closed.  A program closing
 * every descriptor meanwhile (a close loop, close_range, closefrom) or
 * dup2ing onto that number would close ours and could get the number back
 * for a file of its own, which our code would then read and close (a
 * daemon's listening socket gone: e2e_host_matrix's close_all row).  Our
 * code brackets each creation and its move or close with pe_fd_born_begin
 * and _end; the program's close, close_range, closefrom, dup2 and dup3 wait
 * until none is under way, and a creation waits for those under way.  Both
 * waits are bounded (fd_gate.c says why and how long).
 */
PE_SIGSAFE void pe_fd_born_begin(void);
PE_SIGSAFE void pe_fd_born_end(void);
/* Fork child, before anything in it closes: the gate's counts of the
   parent's other threads go (they would hold every close for its bound). */
void pe_fd_gate_atfork_child(void);
/* openat(AT_FDCWD, path, flags | O_CLOEXEC), the system call, moved out of
   the program's way within the gate (not registered: our code reads and
   closes it soon).  The descriptor, or -1 and errno. */
PE_SIGSAFE int pe_fd_open_high(const char *path, int flags);
/* Within the gate: fd, just created, moved up (pe_fd_dup_high) when there is
   room, the old number closed; fd itself otherwise.  errno kept. */
PE_SIGSAFE int pe_fd_move_high(int fd);

/* Around pthread_getattr_np: on the main thread glibc reads /proc/self/maps
   for it (a descriptor born low, as above), so the gate is entered there (1)
   and nowhere else (0); _end takes what _begin returned. */
int pe_fd_main_stack_begin(void);
void pe_fd_main_stack_end(int entered);

/* 1 if fd is one of ours (registered, still open). */
PE_SIGSAFE int pe_fd_is_ours(int fd);

#endif /* PE_FD_H */
