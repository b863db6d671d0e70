/*
 * loadgate.h: our walks of the loaded objects kept out of a fork.
 *
 * dl_iterate_phdr takes the loader's dl_load_write_lock, and glibc's fork
 * resets only the loader's main lock in the child.  A child forked while
 * one of our walks (symbolizing on a server thread, the unwinder's snapshot
 * rebuilt after a dlopen) was inside it inherits that lock held by a thread
 * it does not have: its next walk (ours, after its own dlopen) waits forever.
 * Seen as "fork child 14 of 40 hung" in p_host_fork_dlopen under profiles.
 *
 * So every walk our code makes outside a signal handler goes through
 * pe_loadgate_iterate.  The fork's prepare handler (events.c) closes the gate
 * and waits, bounded, for the walks under way; new ones wait at the gate
 * until the parent and child handlers open it.  A child forked while a walk
 * was still inside (the bound ran out) never walks: its lock is held for good.
 * The program's own walks are left alone (its callbacks may wait for the
 * forking thread).
 *
 * Signal-safe: no (handlers answer from the unwinder's snapshot instead).
 */
#ifndef PE_LOADGATE_H
#define PE_LOADGATE_H

#include <link.h>

#include "pe.h"

/* The real dl_iterate_phdr(cb, data), once no fork is being prepared; 0 without
   a walk in a child whose loader lock was taken at its fork. */
int pe_loadgate_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* Fork prepare: close the gate, wait up to PE_LOADGATE_WAIT_MS for the walks in it. */
void pe_loadgate_close(void);
/* Fork parent (child = 0) and child (1): open the gate again. */
void pe_loadgate_open(int child);

#define PE_LOADGATE_WAIT_MS 1000

#endif /* PE_LOADGATE_H */
