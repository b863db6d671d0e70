/*
 * init.c: the constructor and the order in which modules start, and exit
 * (fork, exec and thread events are events.c's).  Start-up has two phases:
 *   1. pe_init, the constructor: once, single-threaded, before main; cheap
 *      module set-up, then the server thread is started;
 *   2. pe_init_second_phase, on that server thread once the program has
 *      lived PE_HTTP_START_DELAY_MS: anything slow (libunwind's first walk,
 *      binding, civetweb's threads, the heap history thread), so that the
 *      program's start is not delayed and one that exits at once pays for
 *      none of it.
 */
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../http/http.h"
#include "../sampler/peek.h"
#include "../sampler/sampler.h"
#include "../stack/unwind.h"
#include "attach.h"
#include "config.h"
#include "events.h"
#include "fd.h"
#include "guard.h"
#include "init.h"
#include "log.h"
#include "real.h"
#include "threads.h"
#include "tree.h"

/* ---- PROFEP_CHILDREN=off: take ourselves out of LD_PRELOAD ------------------------ */

static int
is_us(const char *entry, size_t len)
{
    static const char me[] = "libprofendpoints.so";
    size_t ml = sizeof(me) - 1;

    return len >= ml && !memcmp(entry + len - ml, me, ml) &&
           (len == ml || entry[len - ml - 1] == '/');
}

static void
strip_ld_preload(void)
{
    char *v = getenv("LD_PRELOAD"), *r, *w;

    if (!v)
        return;
    /* Edit the string in place (it lives in the environment block): the loader
       accepts spaces and colons as separators; keep every other entry. */
    for (r = w = v; *r;) {
        size_t len = strcspn(r, " :");
        if (len && !is_us(r, len)) {
            if (w != v)
                *w++ = ' ';
            memmove(w, r, len);
            w += len;
        }
        r += len;
        r += strspn(r, " :");
    }
    *w = '\0';
    if (!*v)
        unsetenv("LD_PRELOAD");
}

/* ---- constructor and destructor ---------------------------------------------------- */

/*
 * Start-up's second phase, on the server thread (http/server.c runs it after
 * the start delay, under its start lock, unless the process stepped aside
 * meanwhile).  Order matters: the unwinder is warmed
 * before the first request can walk a stack, and under the lock a fork waits
 * on (a fork copying libunwind's half-taken init lock would hang the child);
 * the heap history runs only where a server serves it.
 */
static void
pe_init_second_phase(void)
{
    int served;

    pe_http_warm_unwinder();
    served = pe_http_listen();
    if (served < 0) {
        pe_init_go_dormant(); /* it said why (or stays silent as a tree member) */
        return;
    }
    /* memory over time: the tree's root only (a member's is asked through it);
       not after an attach without the heap's interposers (its pages say why) */
    if (served == 1 && !pe_init_no_interposers() && pe_heap_hist_start() < 0 &&
        pe_fd_stderr_same())
        pe_log_warn("cannot start the heap history thread; /heap_timeline, /heap_peak and "
                    "heap?since= answer 503");
}

/* The server now, with start-up's second phase (preload/attach.c). */
int
pe_init_serve_now(void)
{
    return pe_http_start_after(0, pe_init_second_phase);
}

__attribute__((constructor(101))) static void
pe_init(void)
{
    const char *prog;

    /* dlopen'ed by `profep attach`: profendpoints_attach starts us, with the
       attach command's settings (attach.c). */
    if (pe_attach_loading())
        return;
    pe_real_init();
    pe_guard_enter();
    pe_cfg_load();
    if (!pe_cfg.children)
        strip_ld_preload();
    prog = pe_cfg_progname();
    if (pe_cfg.refuse || (pe_cfg.match[0] && fnmatch(pe_cfg.match, prog, 0) != 0)) {
        pe_heap_init(0);
        goto out; /* dormant: not the program we were asked to watch, or a
                     security setting that cannot be used (config.c said so) */
    }
    if (pe_alone_dormant_at_load()) { /* under a seccomp filter: it said so */
        pe_heap_init(0);
        goto out;
    }
    pe_threads_register(NULL, 0);
    /* The main thread's TLS stays until the process ends, even when it
       calls pthread_exit. */
    pe_threads_publish_tls();
    pe_event_init(); /* the thread-exit key (a low index) and the fork handlers */
    pe_hooks_resolve();
    /* With PROFEP_ADDR=off nothing is printed but a bad setting's line. */
    if (pe_unwind_init() < 0 && !pe_cfg.server_off)
        pe_log_warn("libunwind unavailable; stacks are taken by frame pointers only");
    (void)pe_heap_init(pe_cfg.heap_rate); /* its 503s say why when it cannot work */
    if (pe_sampler_init() < 0 && !pe_cfg.server_off)
        pe_log_warn("CPU sampling unavailable");
    (void)pe_peek_init(); /* PROFEP_PEEK_SIGNAL; says why itself when it cannot */
    pe_tree_init();       /* root or member of a process tree (tree.h) */
    pe_init_set_active();
    /* Deferred (server.c): a program that exits at once never binds. */
    if (!pe_cfg.server_off && pe_http_start_after(PE_HTTP_START_DELAY_MS, pe_init_second_phase) < 0)
        pe_init_go_dormant();
out:
    pe_guard_exit();
}

__attribute__((destructor)) static void
pe_fini(void)
{
    /* Never stop civetweb here: mg_stop waits for in-flight requests (a 30 s
       profile would hold the exit) and hangs forever in fork children.  Long
       handlers see the flag and finish; the kernel reclaims the rest. */
    pe_http_shutdown();
}
