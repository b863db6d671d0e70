/*
 * sigown.h: holding a signal the program may also want (the sampler's
 * SIGPROF in sampler/timer.c, the peek signal in sampler/peek.c).
 *
 * The rules both follow: a signal is taken only over SIG_DFL/SIG_IGN (a
 * program's handler is never replaced); our handler is installed with
 * SA_SIGINFO | SA_RESTART and an empty mask, through the real sigaction; and
 * a program that ignores the signal must hand SIG_IGN on across exec and
 * glibc's spawn child, which reset a handled signal to SIG_DFL.  So around
 * an exec or a spawn (preload/events.c) the kernel gets the program's SIG_IGN
 * back instead of our handler ("hand-on"; our signals meanwhile are
 * discarded: samples lost, nothing else), counted by users so that
 * overlapping execs and spawns restore our handler once, after the last.
 * In a foreign child (a vfork child shares our memory) only the child's own
 * disposition changes, and nothing shared is written: begin returns a token
 * for end instead.
 *
 * `lock` serialises the owner's state changes, the program's sigaction calls
 * for the signal and the hand-on; it is taken with every signal blocked, so a
 * handler that calls sigaction cannot interrupt its own thread's holder.
 * The owner module keeps what differs (what the program believes its
 * disposition is, when to give the signal back) and reads `owned` as it likes.
 *
 * Signal-safe: pe_sig_is_handler, pe_sig_ignores and pe_sig_real_action
 * (sigaction is async-signal-safe); the rest runs in ordinary threads (and
 * the hand-on in a vfork child).
 */
#ifndef PE_SIGOWN_H
#define PE_SIGOWN_H

#include <signal.h>

#include "pe.h"
#include "spin.h"

typedef void (*pe_sig_handler_t)(int, siginfo_t *, void *);

typedef struct pe_sigown_s {
    int sig;                  /* 0: not set up (every call does nothing) */
    pe_sig_handler_t handler; /* ours */
    /* the disposition the program asked for, to hand on (under lock) */
    const struct sigaction *(*prog)(void);
    pe_spin_t lock;
    int owned; /* our handler is the kernel's (atomics; written under lock, or by
                  the owner's handler when it gives the signal up) */
    int handon_users, handon_applied; /* under lock: begun hand-ons; the kernel has SIG_IGN */
} pe_sigown_t;

/* 1 when sa runs a function (not SIG_DFL, not SIG_IGN). */
PE_SIGSAFE static inline int
pe_sig_is_handler(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) || (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN);
}

/* 1 when sa is SIG_IGN. */
PE_SIGSAFE static inline int
pe_sig_ignores(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

/* sigaction(2) itself, not our interposer (resolving it if needed). */
PE_SIGSAFE int pe_sig_real_action(int sig, const struct sigaction *act, struct sigaction *old);

/* Make our handler the kernel's disposition of o->sig.  0 or -1 with errno. */
int pe_sigown_install(pe_sigown_t *o);

void pe_sigown_lock(pe_sigown_t *o, sigset_t *saved);
void pe_sigown_unlock(pe_sigown_t *o, const sigset_t *saved);

/*
 * exec and spawn: while begun, if we own the signal and the program's
 * disposition (o->prog) is SIG_IGN, the kernel has that SIG_IGN.  Not
 * foreign: counted, returns 0.  Foreign: returns the token for end.
 */
int pe_sigown_handon_begin(pe_sigown_t *o, int foreign);
void pe_sigown_handon_end(pe_sigown_t *o, int foreign, int token);

/* Fork child: only this thread is left; free the lock and forget hand-ons. */
void pe_sigown_atfork_child(pe_sigown_t *o);

#endif /* PE_SIGOWN_H */
