/*
 * attach.h: the library's side of `profep attach PID` / `profep detach PID`
 * (docs/ATTACH.md), and the contract the injector (inject/) calls.
 *
 * The injector makes a thread in the target (its bootstrap thread, named
 * PE_ATTACH_THREAD_NAME) that dlopens the library from a memfd, or finds the
 * copy already loaded, and calls one of the two exported entry points.  The
 * constructor sees that name and starts nothing (pe_attach_loading): the
 * start is profendpoints_attach's, with the settings it is given.
 *
 * Both entry points run on that bootstrap thread (never a program thread),
 * write one line into `reply` (NUL-terminated, at most reply_len bytes: the
 * line the injector prints, e.g. "serving http://127.0.0.1:16825 (pid 42)"),
 * and return:
 *   profendpoints_attach  0 started; 1 already serving (reply says where);
 *                         -errno after saying why in reply
 *   profendpoints_detach  0 stopped; 1 nothing of ours was running;
 *                         -errno after saying why
 * `settings` is "NAME=value" lines (PROFEP_* of the attach command) applied
 * as the environment would be at load.  Neither writes to the program's
 * stderr.
 *
 * Signal-safe: no.
 */
#ifndef PE_ATTACH_H
#define PE_ATTACH_H

#include <stddef.h>

#include "pe.h"

/* The bootstrap thread's name (prctl PR_SET_NAME, at most 15 bytes). */
#define PE_ATTACH_THREAD_NAME "profep-attach"
/* The exported entry points, by name (the injector's dlsym). */
#define PE_ATTACH_SYM "profendpoints_attach"
#define PE_DETACH_SYM "profendpoints_detach"
/* reply's size the injector provides. */
#define PE_ATTACH_REPLY_LEN 512

int profendpoints_attach(const char *settings, char *reply, size_t reply_len);
int profendpoints_detach(char *reply, size_t reply_len);

/* The constructor runs on the bootstrap thread: dlopen'ed by profep attach. */
int pe_attach_loading(void);

#endif /* PE_ATTACH_H */
