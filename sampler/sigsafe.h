/*
 * sigsafe.h: may a thread be signalled now without the program seeing it?
 *
 * A handled signal makes a thread's blocking system call return.  The
 * kernel restarts some of them transparently (our handler has SA_RESTART:
 * -ERESTARTSYS, e.g. read on a pipe, wait4, an untimed futex wait), but it
 * turns -ERESTART_RESTARTBLOCK and -ERESTARTNOHAND into EINTR whatever the
 * flag (nanosleep, clock_nanosleep, a timed futex, poll, epoll_wait,
 * select, ...): the program would see a short sleep or a failed wait.  So
 * before each signal we read /proc/self/task/TID/syscall (and stat's state
 * when that is unreadable) and signal only a thread that is running or
 * blocked in a call known to restart; in doubt, not.  "Running" includes a
 * thread woken in the kernel on its way out of its call (waiting for a CPU,
 * or preempted), and poll and select still fail when a signal comes before
 * their last look: a running thread last seen (quiet.h) blocked in a call
 * that does not restart, and that has used under 2 ms of CPU since, is not
 * signalled either.  A thread can still enter a system call between our
 * read and the signal (microseconds).
 *
 * Signal-safe: no.  Library threads only.
 */
#ifndef PE_SIGSAFE_H
#define PE_SIGSAFE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct pe_sigsafe_s {
    long nr;       /* the system call it is blocked in; -1 none or unknown */
    uintptr_t pc;  /* its user PC (after the syscall instruction); 0 unknown */
    char why[128]; /* when not safe: why it is not signalled */
} pe_sigsafe_t;

/*
 * 1: tid may be signalled now; 0: not (out->why says why, out->pc is the
 * one frame /proc gives, when it does); -ESRCH: it is gone.
 */
int pe_sigsafe_check(pid_t tid, pe_sigsafe_t *out);

#endif /* PE_SIGSAFE_H */
