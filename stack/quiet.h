/*
 * quiet.h: a blocked thread's stack without interrupting it.
 *
 * A sibling thread blocked in a system call is not running and its user stack
 * is still.  /proc/self/task/TID/syscall gives its user SP and PC; the loaded
 * objects' call-frame information (libunwind's generic, "remote" API from
 * libunwind-x86_64.so.8, dlopen'd RTLD_LOCAL) recovers the callers from those
 * two registers alone, reading the stack through process_vm_readv on our own
 * pid (a stack that vanishes mid-walk is an error, never a fault).  The
 * syscall line and the context-switch counts are read again after the walk:
 * a thread that ran meanwhile is reported as running.  A thread that has not
 * run since its last capture reuses that capture (bounded cache).
 *
 * Signal-safe: no.  Library threads only; walks are serialized inside.
 */
#ifndef PE_QUIET_H
#define PE_QUIET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../preload/pe.h"

/* Why a thread could not be captured quietly (pe_quiet_capture's *why). */
#define PE_QUIET_WHY_RUNNING "the thread was running"
#define PE_QUIET_WHY_WOKE "the thread woke during the walk"
#define PE_QUIET_WHY_REG "a frame needs a register /proc does not give"
#define PE_QUIET_WHY_WALK "the walk from /proc failed"
#define PE_QUIET_WHY_OFF "no libunwind-x86_64.so.8"

/*
 * Capture thread tid (of this process, not the caller) from /proc: pcs[0] is
 * its PC (the instruction after `syscall` when blocked in one), then return
 * addresses; at most `max` frames.  Returns the number of frames (>= 1), or
 *   -EAGAIN   it is running or woke during the walk: signal it instead;
 *   -ENOTSUP  its stack cannot be recovered this way: signal it instead;
 *   -ESRCH    it is gone.
 * *state gets its /proc state ("sleeping", ...), always; *why a reason when
 * < 0; *cached 1 when the stack was reused unchanged from an earlier capture.
 */
int pe_quiet_capture(pid_t tid, uintptr_t *pcs, int max, const char **state, const char **why,
                     int *cached);

/*
 * The system call thread tid was last seen blocked in by a capture (its
 * /proc syscall line into line), and the CPU time it has used since (*ran_ns,
 * -1 when /proc does not say): a thread now running that has used next to
 * none may still be inside that call, on its way out.  1, or 0 when none is
 * remembered.
 */
int pe_quiet_last_call(pid_t tid, char *line, size_t len, int64_t *ran_ns);

/* Fork child: forget the lock and every cached stack (tids belong to the parent). */
void pe_quiet_atfork_child(void);

#endif /* PE_QUIET_H */
