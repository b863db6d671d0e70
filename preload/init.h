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

#include "pe.h"

PE_SIGSAFE int pe_init_active(void);
/* The constructor finished starting the modules (state.c). */
void pe_init_set_active(void);
/* Step aside for good in this process (bind failed, fork child). */
void pe_init_go_dormant(void);

/* Resolve the next definitions the interposers look up themselves (hooks.c); constructor. */
void pe_hooks_resolve(void);

#endif /* PE_INIT_H */
