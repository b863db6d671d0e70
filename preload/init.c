/*
 * init.c: the constructor and the order in which modules start, the fork
 * child's dormancy, and exit.  Start-up runs once, single-threaded, before
 * main; anything slow (binding, civetweb's threads) happens on our own
 * server thread so the program's start is not delayed.
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
#include "../sampler/unwind.h"
#include "config.h"
#include "guard.h"
#include "init.h"
#include "log.h"
#include "real.h"
#include "threads.h"

static pthread_key_t exit_key;
static int exit_key_ok;

/* ---- thread exit ---------------------------------------------------------------- */

static void
thread_exit(void *unused)
{
    pe_sampler_thread_exiting();
    pe_threads_unregister();
    pe_stripe_release();
}

void
pe_init_thread_exit_hook(void)
{
    /* The key was created in the constructor, so its index is low and
       pthread_setspecific never allocates. */
    if (exit_key_ok && pthread_setspecific(exit_key, (void *)1) == 0)
        pe_threads_publish_tls(); /* it will unregister before its TLS goes */
}

/* ---- fork ----------------------------------------------------------------------- */

static void
atfork_child(void)
{
    /* Our threads did not survive the fork: the child runs no server and no
       timers (SPEC: a fork child stays dormant), but its allocations still
       go through the heap hooks (lock-free: nothing to find held). */
    pe_heap_atfork_child();
    pe_threads_atfork_child();
    pe_http_atfork_child();
    pe_init_go_dormant();
}

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

__attribute__((constructor(101))) static void
pe_init(void)
{
    const char *prog;

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
    pe_threads_register(NULL, 0);
    /* The main thread's TLS stays until the process ends, even when it
       calls pthread_exit. */
    pe_threads_publish_tls();
    if (pthread_key_create(&exit_key, thread_exit) == 0)
        exit_key_ok = 1;
    if (pe_unwind_init() < 0)
        pe_log_warn("libunwind unavailable; stacks are taken by frame pointers only");
    (void)pe_heap_init(pe_cfg.heap_rate); /* says why itself when it cannot work */
    if (pe_sampler_init() < 0)
        pe_log_warn("CPU sampling unavailable");
    (void)pe_peek_init(); /* PROFEP_PEEK_SIGNAL; says why itself when it cannot */
    pthread_atfork(NULL, NULL, atfork_child);
    pe_init_set_active();
    if (!pe_cfg.server_off && pe_http_start() < 0)
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
