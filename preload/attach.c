/*
 * attach.c: the library in a process that was already running (`profep
 * attach PID`, docs/ATTACH.md), and leaving one (`profep detach PID`).
 * Owns the two exported entry points the injector (inject/) calls on its
 * bootstrap thread, and the order in which they start and stop the modules;
 * what each module starts or stops is its own (init.c's server phase,
 * alone.c's step aside).  The constructor of a copy dlopen'ed by the
 * injector starts nothing (pe_attach_loading): the settings are the attach
 * command's, given here as "NAME=value" lines.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../http/http.h"
#include "../sampler/sampler.h"
#include "../stack/unwind.h"
#include "attach.h"
#include "clock.h"
#include "config.h"
#include "events.h"
#include "guard.h"
#include "init.h"
#include "log.h"
#include "real.h"
#include "sigown.h"
#include "tree.h"

/* How long attach waits for the server to listen (libunwind's first walk
   and civetweb's start: ~50 ms; a loaded machine, much more; under valgrind
   on 2 busy cores past 10 s once).  Below the injector's 19 s (stub.h). */
#define PE_ATTACH_LISTEN_MS 15000

/* What the interposers' profiles answer until the GOT slots are redirected
   after an attach (interpose/, issue 41). */
#define PE_ATTACH_NO_HOOKS                                                                         \
    "attached to a running process: this profile needs the library at start (LD_PRELOAD) or "      \
    "an attach that redirects the program's calls, which this build does not do"

/* The interposers' redirection after attach (interpose/), when built in. */
__attribute__((weak)) int pe_interpose_attach(void);
__attribute__((weak)) void pe_interpose_detach(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* one attach or detach at a time */
static int loaded_by_attach; /* the constructor ran on the bootstrap thread */
static int modules_up;       /* the modules were set up (constructor or an attach), under lock */
static int interposed;       /* pe_interpose_attach succeeded, under lock */

/* ---- the constructor's side ------------------------------------------------------------ */

int
pe_attach_loading(void)
{
    char name[16] = "";

    /* Under LD_PRELOAD the constructor runs on the main thread, before our
       prctl interposer could have resolved the real one: no call there.
       The bootstrap thread names itself before it dlopens us (inject/stub.S). */
    if (gettid() == getpid())
        return 0;
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && !strcmp(name, PE_ATTACH_THREAD_NAME))
        loaded_by_attach = 1;
    return loaded_by_attach;
}

/* ---- helpers ------------------------------------------------------------------------- */

static int say(char *reply, size_t len, int rc, const char *fmt, ...) PE_PRINTF(4, 5);

static int
say(char *reply, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;

    if (reply && len) {
        va_start(ap, fmt);
        vsnprintf(reply, len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int
serving_line(char *reply, size_t len, int rc)
{
    return say(reply, len, rc, "serving %s://%s:%d (pid %d)", pe_cfg.tls_cert[0] ? "https" : "http",
               pe_cfg.host, pe_http_listening_port(), (int)getpid());
}

/* The modules' one-time set-up in a process the constructor left alone
   (the constructor's steps without the main thread's registration, the
   tree, the peek and the LD_PRELOAD edit: none fits a running process). */
static void
set_up_modules(void)
{
    pe_real_init();
    pe_event_init(); /* the thread-exit key and the fork handlers: once per process */
    pe_hooks_resolve();
    (void)pe_unwind_init(); /* without it, frame pointers only */
    (void)pe_sampler_init();
    modules_up = 1;
}

/* `profep attach --children`: PROFEP_TREE=ROOTPID:KEY in the settings
   (inject/main.c) makes a tree as LD_PRELOAD's does (preload/tree.h). */
static void
tree_from_settings(const char *settings)
{
    const char *p = settings ? strstr(settings, "PROFEP_TREE=") : NULL;
    unsigned long long key = 0;
    int root = 0;

    if (!p || (p != settings && p[-1] != '\n') || sscanf(p + 12, "%d:%llx", &root, &key) != 2)
        root = 0;
    pe_tree_init_attached((pid_t)root, key);
}

/* Until the server listens, or gave up (it went dormant), bounded. */
static int
wait_listening(void)
{
    int64_t end = pe_clock_ns(CLOCK_MONOTONIC) + PE_ATTACH_LISTEN_MS * 1000000LL;

    while (pe_clock_ns(CLOCK_MONOTONIC) < end) {
        struct timespec ts = {0, 2000000L};
        if (pe_http_listening_port() > 0)
            return 0;
        if (!pe_init_active())
            return -EADDRINUSE;
        nanosleep(&ts, NULL);
    }
    return -ETIMEDOUT;
}

/* ---- the entry points ------------------------------------------------------------------- */

PE_EXPORT int
profendpoints_attach(const char *settings, char *reply, size_t reply_len)
{
    struct sigaction pipe_before, pipe_after;
    char notes[256];
    int rc, preloaded;

    pthread_mutex_lock(&lock);
    pe_guard_enter();
    preloaded = !loaded_by_attach;
    if (pe_init_active()) {
        rc = wait_listening() == 0
                 ? serving_line(reply, reply_len, 1)
                 : say(reply, reply_len, -EBUSY, "the library is loaded and starting its server");
        goto out;
    }
    if (preloaded && !pe_alone_aside()) {
        rc = say(reply, reply_len, -EPERM,
                 "the library was loaded at start and stays dormant here (PROFEP_MATCH, a "
                 "seccomp filter or a port taken at start)");
        goto out;
    }
    /* The attach command's PROFEP_* over the defaults; its lines go to the
       injector, never to the program's stderr. */
    pe_log_capture(notes, sizeof(notes)); /* a bad value's line: the reply's */
    pe_cfg_load_settings(settings ? settings : "");
    pe_log_capture(NULL, 0);
    pe_log_set_level(PE_LOG_OFF);
    if (pe_cfg.refuse || pe_cfg.server_off) {
        rc = say(reply, reply_len, -EINVAL,
                 "no server to start (PROFEP_ADDR=off, or a setting refused)");
        goto out;
    }
    if (pe_alone_aside())
        pe_alone_rejoin(); /* a detach before: every module may start again */
    tree_from_settings(settings);
    if (!modules_up && !preloaded)
        set_up_modules();
    if (preloaded) {
        pe_heap_rejoin(pe_cfg.heap_rate); /* its interposers never left */
        pe_init_set_attached((int64_t)time(NULL), NULL);
    } else {
        if (!interposed && pe_interpose_attach) {
            /* (maps the heap's tables; it says "not interposed" until
               pe_interpose_attach redirects the slots and makes it available) */
            (void)pe_heap_init(pe_cfg.heap_rate);
            interposed = pe_interpose_attach() == 0;
        } else if (interposed)
            pe_heap_rejoin(pe_cfg.heap_rate);
        if (!interposed)
            pe_heap_set_unavailable(PE_ATTACH_NO_HOOKS);
        pe_init_set_attached((int64_t)time(NULL), interposed ? NULL : PE_ATTACH_NO_HOOKS);
    }
    pe_init_set_active();
    (void)pe_sig_real_action(SIGPIPE, NULL, &pipe_before);
    if ((rc = pe_init_serve_now()) == 0)
        rc = wait_listening();
    /* civetweb ignores SIGPIPE for the whole process as it starts (its sends
       do not need it); under LD_PRELOAD our sigaction swallows that, here
       the call went straight to libc: give the program its disposition back. */
    if (!preloaded && pe_sig_real_action(SIGPIPE, NULL, &pipe_after) == 0 &&
        pipe_after.sa_handler != pipe_before.sa_handler)
        (void)pe_sig_real_action(SIGPIPE, &pipe_before, NULL);
    if (rc == 0) {
        rc = serving_line(reply, reply_len, 0);
        if (notes[0] && reply) /* e.g. "PROFEP_HEAP_RATE=x: ... using 524288" */
            snprintf(reply + strlen(reply), reply_len - strlen(reply), "; %s", notes);
    } else {
        (void)pe_alone_detach();
        if (rc == -ETIMEDOUT)
            say(reply, reply_len, rc, "the server did not start within %d s",
                PE_ATTACH_LISTEN_MS / 1000);
        else
            say(reply, reply_len, rc,
                "cannot listen on %s:%d (is the port taken? PROFEP_ADDR=127.0.0.1:0 picks a "
                "free one)",
                pe_cfg.host, pe_cfg.port);
    }
out:
    pe_guard_exit();
    pthread_mutex_unlock(&lock);
    return rc;
}

PE_EXPORT int
profendpoints_detach(char *reply, size_t reply_len)
{
    int rc, ran;

    pthread_mutex_lock(&lock);
    pe_guard_enter();
    if (pe_alone_aside()) {
        rc = say(reply, reply_len, 1, "nothing of ours runs in pid %d", (int)getpid());
        goto out;
    }
    ran = pe_alone_detach(); /* server, samplers, timers, signals, our threads */
    if (interposed && pe_interpose_detach)
        pe_interpose_detach();
    interposed = 0;
    pe_init_set_attached(0, NULL);
    rc = ran ? say(reply, reply_len, 0, "detached from pid %d", (int)getpid())
             : say(reply, reply_len, 1, "nothing of ours ran in pid %d", (int)getpid());
out:
    pe_guard_exit();
    pthread_mutex_unlock(&lock);
    return rc;
}
