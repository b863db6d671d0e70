/*
 * peek.h: PROFEP_PEEK_SIGNAL, Julia's SIGUSR1 peek: on that signal, print every
 * thread's stack (the debug=2 text) and then a CPU profile of
 * PROFEP_PEEK_SECONDS as a text tree, to stderr.
 *
 * The handler only posts a semaphore (sem_post is async-signal-safe; no file
 * descriptor of ours sits in the program's fd table); a thread of ours, with
 * every signal blocked and marked internal, does the work.  The signal is
 * taken only when its disposition is SIG_DFL/SIG_IGN at start-up; a program
 * that installs its own disposition later gets it (the peek then stops), and
 * sigaction reports the program's own view (ours hidden).
 *
 * Signal-safe: no (its handler is internal to peek.c).
 */
#ifndef PE_PEEK_H
#define PE_PEEK_H

#include <signal.h>

/* Constructor: install the peek when configured.  0, or -errno after one log line. */
int pe_peek_init(void);
/*
 * sigaction interposition for the peek signal: returns 1 when it made the call
 * itself (*rc then holds sigaction's result), 0 when the signal is not ours.
 */
int pe_peek_sigaction(int signum, const struct sigaction *act, struct sigaction *old, int *rc);
/*
 * exec and spawn (preload/events.c): while begun, a program's SIG_IGN for the
 * peek signal is the kernel's disposition, so exec and glibc's spawn child
 * hand it on (a peek signal meanwhile is ignored, as the program asked).
 * Not foreign: reference counted, returns 0.  Foreign (a vfork child): only
 * that child's disposition; returns a token for end.
 */
int pe_peek_handon_begin(int foreign);
void pe_peek_handon_end(int foreign, int token);
/* fork child (dormant): the program's disposition again. */
void pe_peek_atfork_child(void);
/* For good (a process that must be alone): the program's disposition back, and
   the peek thread leaves after the report under way, if any. */
void pe_peek_step_aside(void);

#endif /* PE_PEEK_H */
