/*
 * init.h: the library's life cycle: constructor, fork child, exit.
 *
 * The library is "active" in a process where it started normally; it is
 * dormant in a process that does not match PROFEP_MATCH, whose bind failed,
 * or that is a fork child: dormant means no server, no timers, no sampling.
 *
 * Signal-safe: pe_init_active.
 */
#ifndef PE_INIT_H
#define PE_INIT_H

#include <stddef.h>
#include <stdint.h>

#include "pe.h"

PE_SIGSAFE int pe_init_active(void);
/* The constructor finished starting the modules (init_state.c). */
void pe_init_set_active(void);
/* Step aside for good in this process (bind failed, fork child). */
void pe_init_go_dormant(void);

/*
 * Attached to a running process (preload/attach.c): the wall-clock second of
 * the attach (profiles say "since attach at TIME"), 0 when the library was
 * loaded at start.  pe_init_no_interposers: NULL, or why the profiles the
 * interposers feed (heap, allocs, mutex, block) cannot work: attached
 * without them.
 */
int64_t pe_init_attached_at(void);
const char *pe_init_no_interposers(void);
void pe_init_set_attached(int64_t when, const char *no_interposers);
/* "since attach at 2026-11-28 09:30:43 UTC" into buf, or "" when loaded at start. */
const char *pe_init_attach_note(char *buf, size_t len);
/* What the last attach's redirection did and left alone (interpose.c's note, a
   string that stays valid), for the profiles of every interposer; "" otherwise. */
void pe_init_set_interpose_note(const char *note);
const char *pe_init_interpose_note(void);

/* Start the server at once with start-up's second phase (preload/attach.c). */
int pe_init_serve_now(void);

/* Resolve the next definitions the interposers look up themselves (process_hooks.c);
   constructor. */
void pe_hooks_resolve(void);

#endif /* PE_INIT_H */
