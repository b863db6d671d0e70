/*
 * tree_succession.c: the process tree when its root is gone (tree_int.h): a
 * member's watcher thread, and the member that becomes the root.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "proc.h"
#include "threads.h"
#include "tree_int.h"

/* The port-taking hook (tree.h), and the watcher thread. */
int (*pe_tree_take_port)(const char *host, int port);
static int watch_live, watch_stop;

PE_SIGSAFE void
pe_tree_succ_atfork_child(void)
{
    watch_live = 0; /* the parent's watcher is not the child's */
    watch_stop = 0;
}

void
pe_tree_succ_stop(void)
{
    __atomic_store_n(&watch_stop, 1, __ATOMIC_RELEASE);
    pe_clock_wait_cleared(&watch_live, 5000); /* a member's watcher leaves within 50 ms */
}

/*
 * When the root is gone (a launcher such as pg_ctl, apachectl or a shell
 * script that started the tree and exited), the tree stays one tree: the
 * first member to find it so binds the tree's registry name (the same
 * root pid and nonce, so every member's and every later child's datagrams
 * reach it), becomes the root, takes the root's address if it can
 * (PROFEP_ADDR's port, or the port the root's port file named) and writes
 * the root's port file with where it serves.  The others register with it
 * again.  Each member's watcher looks once a second (one stat of the
 * root's /proc entry); nothing else is sent while the root lives.
 */
#define PE_TREE_WATCH_MS 1000
#define PE_TREE_ELDER_TICKS 3

/* The tree's first root: alive (not a zombie, not gone, not its pid used
   again: its start time is taken at the first look)? */
static int
first_root_alive(void)
{
    static unsigned long long started;
    pe_proc_stat_t st;

    if (pe_proc_stat(pe_tree_self.root_pid, 0, &st) < 0 || st.state == 'Z' || st.state == 'X')
        return 0;
    if (!started)
        started = st.starttime;
    return st.starttime == started;
}

/* Where the root served: PROFEP_ADDR's port, or (port 0) what its file says. */
static int
root_port(void)
{
    if (pe_cfg.port)
        return pe_cfg.port;
    return pe_tree_pf_root_port();
}

/* This member becomes the root: fd is the registry's socket, bound. */
static void
promote(int fd)
{
    const char *host = "127.0.0.1";
    int port = root_port(), took = 0;

    __atomic_store_n(&pe_tree_self.role, PE_TREE_ROOT, __ATOMIC_RELEASE);
    pe_tree_reg_start(fd); /* which publishes fd as the registry's socket first */
    /* TLS: a member serves plain HTTP, never on the root's TLS port */
    if (port && !pe_cfg.tls_cert[0] && pe_tree_take_port &&
        pe_tree_take_port(pe_cfg.host, port) == 0) {
        pe_tree_self.own_port = port;
        host = pe_cfg.host;
        took = 1;
    }
    pe_tree_pf_as_root(host, pe_tree_self.own_port);
    pe_log_info("the tree's root (pid %d) is gone: pid %d (%s) serves the tree on %s:%d%s",
                (int)pe_tree_self.root_pid, (int)getpid(), pe_cfg_progname(), host,
                pe_tree_self.own_port, took || !port ? "" : " (the root's port is taken)");
}

static void *
watch_main(void *unused)
{
    struct timespec step = {0, 50 * 1000000L};
    int ms = 0, fd, gone = 0;
    pid_t parent;

    (void)unused;
    pe_threads_mark_internal();
    while (!__atomic_load_n(&watch_stop, __ATOMIC_ACQUIRE)) {
        nanosleep(&step, NULL);
        if ((ms += 50) < PE_TREE_WATCH_MS)
            continue;
        ms = 0;
        if (first_root_alive())
            continue;
        /* Gone: tell whoever holds the registry now (again each time: a
           successor may have just taken it), or become it.  A member whose
           parent lives on (the postmaster's checkpointer) leaves the parent
           PE_TREE_ELDER_TICKS first: the tree's new root is the oldest. */
        gone++;
        parent = getppid();
        if (pe_tree_reg_send(pe_tree_self.own_port, 1) != -ECONNREFUSED ||
            (parent != 1 && parent != pe_tree_self.root_pid && gone <= PE_TREE_ELDER_TICKS))
            continue;
        if ((fd = pe_tree_reg_bind()) >= 0) {
            promote(fd);
            break;
        }
    }
    __atomic_store_n(&watch_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

void
pe_tree_succ_start(void)
{
    pthread_attr_t attr;
    pthread_t t;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    __atomic_store_n(&watch_live, 1, __ATOMIC_RELEASE);
    if (pe_threads_create_small(&t, &attr, watch_main, NULL) != 0)
        __atomic_store_n(&watch_live, 0, __ATOMIC_RELEASE);
    pthread_attr_destroy(&attr);
}
