/*
 * tree.c: the process tree (tree.h): this process's role in it, the root's
 * PROFEP_TREE, the fork child's safe point, and what happens when this
 * process serves or steps aside.  The other jobs have files of their own
 * (tree_int.h): the registry and a member's registration
 * (tree_registry.c), the succession when the root is gone
 * (tree_succession.c), the port files (tree_portfile.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "rand.h"
#include "tree_int.h"

pe_tree_self_t pe_tree_self;
int pe_tree_pending;
static int64_t fork_ns;    /* when this fork child was made (CLOCK_MONOTONIC) */
static sigset_t last_mask; /* the mask at the previous blocking call while pending */
static int mask_seen;
/* A root: PROFEP_TREE's value in our environment ("pid:nonce:PORTS", the last
   five digits the port it announced, written in place once it serves), and
   the port an earlier image of this pid announced (exec kept the variable). */
static char *tree_env;
static char env_buf[80];
static int prev_port;

/* ---- roles ------------------------------------------------------------------------- */

static unsigned long long
random_u64(void)
{
    uint64_t v = 0;

    if (syscall(SYS_getrandom, &v, sizeof(v), 1 /* GRND_NONBLOCK */) == (long)sizeof(v) && v)
        return v;
    pe_rand_seed(&v); /* no entropy yet (early boot): the clock, tid and a counter */
    return v;
}

void
pe_tree_init(void)
{
    const char *v = getenv("PROFEP_TREE"), *pf = getenv("PROFEP_PORT_FILE");
    unsigned long long n;
    int pid, port = 0, got;

    pe_tree_self.role = PE_TREE_NONE;
    pe_tree_pf_init(pf); /* a lone process's %p port file goes at its exit too */
    if (!pe_cfg.children || pe_cfg.server_off)
        return; /* children off: nothing below us loads the library */
    got = v ? sscanf(v, "%d:%llx:%d", &pid, &n, &port) : 0;
    if (got >= 2 && pid > 0 && pid != getpid()) {
        pe_tree_self.role = PE_TREE_EXEC;
        pe_tree_self.root_pid = pid;
        pe_tree_self.nonce = n;
        return; /* kept in the environment: our own exec'd children join too */
    }
    /* Set before main, single-threaded: no getenv of the program races it. */
    pe_tree_self.role = PE_TREE_ROOT;
    pe_tree_self.root_pid = getpid();
    if (got >= 2 && pid == getpid()) {
        /* The root exec'd (a launcher chain in one pid: env, a shell, a
           pyenv shim, the interpreter): the same tree, and the address an
           earlier image announced is kept and not announced again.  It is
           in PROFEP_TREE when the program passed its environment on as it
           was; a shell builds the one it passes from what it read at its
           start, so the port file an earlier image wrote says it too. */
        pe_tree_self.nonce = n;
        prev_port = got == 3 && port > 0 && port < 65536 ? port : pe_tree_pf_earlier_port();
    } else {
        pe_tree_self.nonce = random_u64();
    }
    /* Our own storage (putenv), never setenv's: glibc keeps the strings it
       made in a search tree, which a string changed in place would upset. */
    snprintf(env_buf, sizeof(env_buf), "PROFEP_TREE=%d:%016llx:%05d", (int)pe_tree_self.root_pid,
             pe_tree_self.nonce, prev_port);
    if (putenv(env_buf) == 0)
        tree_env = env_buf + strlen("PROFEP_TREE=");
}

int
pe_tree_announced_port(void)
{
    return prev_port;
}

/* The root serves on port: its PROFEP_TREE says so to a later image of this
   pid (five digits written in place: the string stays as long, and a getenv
   of the program's reads it whole or nearly, never out of bounds). */
static void
tree_env_port(int port)
{
    size_t len;
    char d[6];

    if (!tree_env || (len = strlen(tree_env)) < 6 || tree_env[len - 6] != ':' || port <= 0 ||
        port > 65535)
        return;
    snprintf(d, sizeof(d), "%05d", port);
    memcpy(tree_env + len - 5, d, 5);
}

void
pe_tree_init_attached(pid_t root, unsigned long long key)
{
    if (pe_tree_reg_rearm() < 0)
        return; /* an earlier registry thread is still leaving: no tree this time */
    pe_tree_self.own_port = 0;
    pe_tree_self.root_pid = root;
    pe_tree_self.nonce = key;
    pe_tree_self.role = root <= 0 ? PE_TREE_NONE : root == getpid() ? PE_TREE_ROOT : PE_TREE_EXEC;
}

int
pe_tree_role(void)
{
    return pe_tree_self.role;
}

int
pe_tree_member(void)
{
    return pe_tree_self.role == PE_TREE_FORK || pe_tree_self.role == PE_TREE_EXEC;
}

const char *
pe_tree_origin_name(int origin)
{
    return origin == PE_TREE_ROOT ? "root" : origin == PE_TREE_FORK ? "fork" : "exec";
}

/* ---- fork child ---------------------------------------------------------------------- */

PE_SIGSAFE int
pe_tree_atfork_child(int parent_active)
{
    pe_tree_reg_atfork_child();
    mask_seen = 0;
    pe_tree_self.own_port = 0;
    pe_tree_pf_atfork_child();
    pe_tree_succ_atfork_child();
    __atomic_store_n(&pe_tree_pending, 0, __ATOMIC_RELAXED);
    if (!parent_active || pe_tree_self.role == PE_TREE_NONE)
        return 0;
    pe_tree_self.role = PE_TREE_FORK;
    fork_ns = pe_clock_ns(CLOCK_MONOTONIC);
    __atomic_store_n(&pe_tree_pending, 1, __ATOMIC_RELAXED);
    return 1;
}

int
pe_tree_start_due(int long_wait)
{
    sigset_t cur;
    stack_t ss;
    long long ms;
    int same;

    /* A signal handler runs with more signals blocked than the code it
       interrupted (its own at least), or on the alternate stack: start only
       when this blocking call has the same mask as the previous one. */
    if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
        return 0;
    memset(&cur, 0, sizeof(cur)); /* the kernel fills only its 64 bits of glibc's 1024 */
    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    same = mask_seen && !memcmp(&cur, &last_mask, sizeof(cur));
    last_mask = cur;
    mask_seen = 1;
    ms = (pe_clock_ns(CLOCK_MONOTONIC) - fork_ns) / 1000000;
    if (!long_wait && (!same || ms < PE_TREE_LIVE_MS))
        return 0;
    /* 0 when another thread won */
    return __atomic_exchange_n(&pe_tree_pending, 0, __ATOMIC_ACQ_REL);
}

/* ---- serving ---------------------------------------------------------------------- */

void
pe_tree_served(int port)
{
    pe_tree_self.own_port = port;
    if (pe_tree_self.role == PE_TREE_ROOT) {
        tree_env_port(port);
        pe_tree_reg_root_start();
    } else if (pe_tree_member()) {
        pe_tree_pf_write(port);
        pe_tree_reg_join(port);
        pe_tree_succ_start();
    }
}

void
pe_tree_step_aside(void)
{
    int fd = pe_tree_reg_take_fd();

    __atomic_store_n(&pe_tree_pending, 0, __ATOMIC_RELAXED);
    pe_tree_exit_quiet();
    pe_tree_succ_stop();
    if (fd >= 0)
        pe_tree_reg_stop(fd);
    if (pe_tree_member() && pe_tree_self.own_port) {
        pe_tree_self.own_port = 0;
        pe_tree_reg_join(0);
    }
}
