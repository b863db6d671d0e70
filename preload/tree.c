/*
 * tree.c: the process tree (tree.h): roles, the fork child's safe point, the
 * root's registry and its receiving thread, a member's registration, the
 * succession when the root is gone, and a member's port file at its exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "guard.h"
#include "log.h"
#include "portfile.h"
#include "proc.h"
#include "rand.h"
#include "real.h"
#include "threads.h"
#include "tree.h"

static int role;
static pid_t root_pid;
static unsigned long long nonce;
int pe_tree_pending;
static int64_t fork_ns;    /* when this fork child was made (CLOCK_MONOTONIC) */
static sigset_t last_mask; /* the mask at the previous blocking call while pending */
static int mask_seen;
static int own_port;             /* where this process serves, once it does (pe_tree_served) */
static char port_tmpl[PATH_MAX]; /* PROFEP_PORT_FILE as given, when it holds %p */
static char cwd_at_load[PATH_MAX];
static int port_written; /* this member wrote its own %p port file */
/* A root: PROFEP_TREE's value in our environment ("pid:nonce:PORTS", the last
   five digits the port it announced, written in place once it serves), and
   the port an earlier image of this pid announced (exec kept the variable). */
static char *tree_env;
static char env_buf[80];
static int prev_port;

/* Succession (members): the watcher thread, and the port-taking hook. */
int (*pe_tree_take_port)(const char *host, int port);
static int watch_live, watch_stop;

/* The registry (root). */
static int reg_fd = -1, reg_stop; /* its socket; pe_tree_step_aside: the thread leaves */
static int reg_live;              /* the registry thread is started and has not left */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Grown by doubling as members register (most programs have none): under
   `ulimit -v` a table of PE_TREE_MAX in our data was 352 KiB of the
   program's address space. */
static pe_tree_proc_t *reg;
static int reg_cap;
static int nreg;

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

/* The port in this process's port file when an image of this process wrote
   it (not older than the process: a pid used again), else 0. */
static int
port_file_port(void)
{
    char buf[160], *colon;
    pe_proc_stat_t ps;
    struct stat st;
    long long started;
    int port;

    if (!pe_cfg.port_file[0] || stat(pe_cfg.port_file, &st) < 0 || pe_proc_stat(0, 0, &ps) < 0 ||
        !(started = pe_proc_started(ps.starttime)) || (long long)st.st_mtime < started ||
        pe_proc_read(pe_cfg.port_file, buf, sizeof(buf)) <= 0 || !(colon = strrchr(buf, ':')))
        return 0;
    port = atoi(colon + 1);
    return port > 0 && port < 65536 ? port : 0;
}

void
pe_tree_init(void)
{
    const char *v = getenv("PROFEP_TREE"), *pf = getenv("PROFEP_PORT_FILE");
    unsigned long long n;
    int pid, port = 0, got;

    role = PE_TREE_NONE;
    if (!pe_cfg.children || pe_cfg.server_off)
        return; /* children off: nothing below us loads the library */
    if (pf && strstr(pf, "%p") && strlen(pf) < sizeof(port_tmpl)) {
        snprintf(port_tmpl, sizeof(port_tmpl), "%s", pf);
        if (pf[0] != '/' && !getcwd(cwd_at_load, sizeof(cwd_at_load)))
            port_tmpl[0] = '\0';
    }
    got = v ? sscanf(v, "%d:%llx:%d", &pid, &n, &port) : 0;
    if (got >= 2 && pid > 0 && pid != getpid()) {
        role = PE_TREE_EXEC;
        root_pid = pid;
        nonce = n;
        return; /* kept in the environment: our own exec'd children join too */
    }
    /* Set before main, single-threaded: no getenv of the program races it. */
    role = PE_TREE_ROOT;
    root_pid = getpid();
    if (got >= 2 && pid == getpid()) {
        /* The root exec'd (a launcher chain in one pid: env, a shell, a
           pyenv shim, the interpreter): the same tree, and the address an
           earlier image announced is kept and not announced again.  It is
           in PROFEP_TREE when the program passed its environment on as it
           was; a shell builds the one it passes from what it read at its
           start, so the port file an earlier image wrote says it too. */
        nonce = n;
        prev_port = got == 3 && port > 0 && port < 65536 ? port : port_file_port();
    } else {
        nonce = random_u64();
    }
    /* Our own storage (putenv), never setenv's: glibc keeps the strings it
       made in a search tree, which a string changed in place would upset. */
    snprintf(env_buf, sizeof(env_buf), "PROFEP_TREE=%d:%016llx:%05d", (int)root_pid, nonce,
             prev_port);
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
    if (__atomic_load_n(&reg_live, __ATOMIC_ACQUIRE))
        return; /* an earlier registry thread is still leaving: no tree this time */
    __atomic_store_n(&reg_stop, 0, __ATOMIC_RELEASE);
    own_port = 0;
    root_pid = root;
    nonce = key;
    role = root <= 0 ? PE_TREE_NONE : root == getpid() ? PE_TREE_ROOT : PE_TREE_EXEC;
}

int
pe_tree_role(void)
{
    return role;
}

int
pe_tree_member(void)
{
    return role == PE_TREE_FORK || role == PE_TREE_EXEC;
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
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* A member never reads the registry; whoever held its lock is gone. */
    memcpy(&reg_lock, &fresh, sizeof(reg_lock));
    nreg = 0;
    reg = NULL; /* the parent's copy stays behind: no free() here */
    reg_cap = 0;
    reg_fd = -1; /* the root's socket: never shut from a child */
    reg_live = 0;
    mask_seen = 0;
    own_port = 0;
    port_written = 0;
    watch_live = 0; /* the parent's watcher is not the child's */
    watch_stop = 0;
    __atomic_store_n(&pe_tree_pending, 0, __ATOMIC_RELAXED);
    if (!parent_active || role == PE_TREE_NONE)
        return 0;
    role = PE_TREE_FORK;
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

/* ---- /proc ---------------------------------------------------------------------------- */

static int
alive(const pe_tree_proc_t *p)
{
    pe_proc_stat_t st;

    return pe_proc_stat(p->pid, 0, &st) == 0 && st.starttime == p->starttime && st.state != 'Z' &&
           st.state != 'X';
}

/* ---- the registry (root) ---------------------------------------------------------------- */

static socklen_t
tree_addr(struct sockaddr_un *a, pid_t root, unsigned long long n)
{
    int len;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* Abstract namespace (leading NUL): no file, gone with the last descriptor. */
    len = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "profendpoints-tree-%d-%016llx",
                   (int)root, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* Drop the dead; the lock is held. */
static void
reap_locked(void)
{
    int i, k = 0;

    for (i = 0; i < nreg; i++)
        if (alive(&reg[i]))
            reg[k++] = reg[i];
    nreg = k;
}

static void
reg_add(const pe_tree_proc_t *p)
{
    int i;

    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < nreg && reg[i].pid != p->pid; i++)
        ;
    if (i == nreg && nreg == reg_cap)
        reap_locked();
    if (i == nreg && nreg == reg_cap && reg_cap < PE_TREE_MAX) {
        int cap = reg_cap ? 2 * reg_cap : 16;
        pe_tree_proc_t *v = realloc(reg, (size_t)cap * sizeof(*v));

        if (v) {
            reg = v;
            reg_cap = cap;
        }
    }
    if (i < nreg || nreg < reg_cap) {
        if (i == nreg)
            i = nreg++;
        reg[i] = *p;
    }
    pthread_mutex_unlock(&reg_lock);
}

/* Is pid registered with this port already? */
static int
known(pid_t pid, int port)
{
    int i, found = 0;

    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < nreg && !found; i++)
        found = reg[i].pid == pid && reg[i].port == port;
    pthread_mutex_unlock(&reg_lock);
    return found;
}

/* A member that stepped aside (port 0): it serves no more. */
static void
reg_del(pid_t pid)
{
    int i;

    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < nreg; i++)
        if (reg[i].pid == pid) {
            reg[i] = reg[--nreg];
            break;
        }
    pthread_mutex_unlock(&reg_lock);
}

static int
descendant(pid_t pid)
{
    int depth;

    for (depth = 0; pid > 1 && depth < 64; depth++) {
        if (!(pid = pe_proc_ppid(pid)))
            return 0;
        if (pid == getpid())
            return 1;
    }
    return 0;
}

/* A message: "PEv1 <pid> <port> <origin> <program>". */
static void
receive(int fd)
{
    char buf[256], cbuf[CMSG_SPACE(sizeof(struct ucred))], prog[64];
    struct iovec iov = {buf, sizeof(buf) - 1};
    struct msghdr mh;
    struct cmsghdr *c;
    struct ucred *cred = NULL;
    pe_tree_proc_t p;
    ssize_t n;
    pe_proc_stat_t st;
    int pid, port, origin;

    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    n = recvmsg(fd, &mh, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
            cred = (struct ucred *)CMSG_DATA(c);
    prog[0] = '\0';
    /* Only for themselves, and only our own user's processes or our own
       descendants (a prefork server's workers drop to another user). */
    if (!cred || (cred->uid != getuid() && !descendant(cred->pid)) ||
        sscanf(buf, "PEv1 %d %d %d %63s", &pid, &port, &origin, prog) < 3 || pid != cred->pid ||
        port < 0 || port > 65535 || (origin != PE_TREE_FORK && origin != PE_TREE_EXEC))
        return;
    if (port == 0) {
        reg_del(pid);
        return;
    }
    if (known(pid, port))
        return; /* a member saying again that it serves (succession) */
    memset(&p, 0, sizeof(p));
    p.pid = pid;
    p.port = port;
    p.origin = origin;
    snprintf(p.program, sizeof(p.program), "%s", prog);
    if (pe_proc_stat(pid, 0, &st) == 0) {
        p.starttime = st.starttime;
        reg_add(&p);
    }
}

static void *
registry_main(void *arg)
{
    int fd = (int)(intptr_t)arg;

    pe_threads_mark_internal();
    while (!__atomic_load_n(&reg_stop, __ATOMIC_ACQUIRE))
        receive(fd);
    close(fd);
    __atomic_store_n(&reg_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

/* The registry's socket, bound to the tree's name; -errno (EADDRINUSE: held). */
static int
registry_bind(void)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, root_pid, nonce);
    int fd, one = 1, rcv = 1 << 20, err;

    /* Our thread: the descriptor is moved high and close-on-exec (fd.h). */
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0)
        return -errno;
    (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    if (bind(fd, (struct sockaddr *)&a, len) < 0) {
        err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

static void
registry_start(int fd)
{
    pthread_attr_t attr;
    pthread_t t;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    __atomic_store_n(&reg_fd, fd, __ATOMIC_RELEASE);
    __atomic_store_n(&reg_live, 1, __ATOMIC_RELEASE);
    if (pe_threads_create_small(&t, &attr, registry_main, (void *)(intptr_t)fd) != 0) {
        __atomic_store_n(&reg_fd, -1, __ATOMIC_RELEASE);
        __atomic_store_n(&reg_live, 0, __ATOMIC_RELEASE);
        close(fd);
    }
    pthread_attr_destroy(&attr);
}

static void
root_start(void)
{
    int fd = registry_bind();

    if (fd < 0) {
        pe_log_warn("process tree unavailable (cannot bind its socket: %s); children are "
                    "served on their own ports only",
                    strerror(-fd));
        return;
    }
    registry_start(fd);
}

/* ---- a member ------------------------------------------------------------------------- */

static void
write_port_file(int port)
{
    char path[PATH_MAX], full[2 * PATH_MAX + 8];

    if (!port_tmpl[0] || pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)getpid()) < 0)
        return;
    if (path[0] != '/')
        snprintf(full, sizeof(full), "%s/%s", cwd_at_load, path);
    else
        snprintf(full, sizeof(full), "%s", path);
    if (pe_portfile_write(full, "127.0.0.1", port) == 0) /* a member stays silent */
        port_written = 1;
}

/* port 0: this member serves no more (pe_tree_step_aside).  tries: sends
   attempted while the root is not there yet.  0, or the last -errno. */
static int
register_tries(int port, int tries_max)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, root_pid, nonce);
    struct timespec pause = {0, 50 * 1000000L};
    char msg[160];
    int fd, n, tries, err = -EAGAIN;

    n = snprintf(msg, sizeof(msg), "PEv1 %d %d %d %.63s", (int)getpid(), port, role,
                 pe_cfg_progname());
    if ((fd = socket(AF_UNIX, SOCK_DGRAM, 0)) < 0)
        return -errno;
    for (tries = 0; tries < tries_max; tries++) {
        if (sendto(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len) ==
            n) {
            err = 0;
            break;
        }
        err = -errno;
        if (errno != EAGAIN && errno != ECONNREFUSED && errno != ENOENT && errno != ENOBUFS)
            break;
        if (tries + 1 < tries_max)
            nanosleep(&pause, NULL);
    }
    close(fd);
    return err;
}

static void
register_with_root(int port)
{
    /* The root may still be starting (an exec'd child is quick), or its queue
       full (hundreds of children at once): retry for about five seconds. */
    (void)register_tries(port, port ? 100 : 1);
}

/* ---- succession ------------------------------------------------------------------------ */

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

    if (pe_proc_stat(root_pid, 0, &st) < 0 || st.state == 'Z' || st.state == 'X')
        return 0;
    if (!started)
        started = st.starttime;
    return st.starttime == started;
}

/* The root's port file: the template with its pid, or the one fixed path. */
static int
root_port_file(char *out, size_t len)
{
    char path[PATH_MAX];

    if (port_tmpl[0]) {
        if (pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)root_pid) < 0)
            return -ENAMETOOLONG;
        if (path[0] != '/')
            snprintf(out, len, "%s/%s", cwd_at_load, path);
        else
            snprintf(out, len, "%s", path);
    } else {
        snprintf(out, len, "%s", pe_cfg.port_file);
    }
    return out[0] ? 0 : -ENOENT;
}

/* Where the root served: PROFEP_ADDR's port, or (port 0) what its file says. */
static int
root_port(void)
{
    char path[2 * PATH_MAX + 8], buf[160], *colon;
    int port = 0;

    if (pe_cfg.port)
        return pe_cfg.port;
    if (root_port_file(path, sizeof(path)) == 0 && pe_proc_read(path, buf, sizeof(buf)) > 0 &&
        (colon = strrchr(buf, ':')))
        port = atoi(colon + 1);
    return port > 0 && port < 65536 ? port : 0;
}

/* This member becomes the root: fd is the registry's socket, bound. */
static void
promote(int fd)
{
    char path[2 * PATH_MAX + 8];
    const char *host = "127.0.0.1";
    int port = root_port(), took = 0;

    __atomic_store_n(&role, PE_TREE_ROOT, __ATOMIC_RELEASE);
    __atomic_store_n(&reg_fd, fd, __ATOMIC_RELEASE);
    registry_start(fd);
    /* TLS: a member serves plain HTTP, never on the root's TLS port */
    if (port && !pe_cfg.tls_cert[0] && pe_tree_take_port &&
        pe_tree_take_port(pe_cfg.host, port) == 0) {
        own_port = port;
        host = pe_cfg.host;
        took = 1;
    }
    if (port_written)
        write_port_file(own_port);
    if (root_port_file(path, sizeof(path)) == 0)
        (void)pe_portfile_write(path, host, own_port);
    pe_log_info("the tree's root (pid %d) is gone: pid %d (%s) serves the tree on %s:%d%s",
                (int)root_pid, (int)getpid(), pe_cfg_progname(), host, own_port,
                took || !port ? "" : " (the root's port is taken)");
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
        if (register_tries(own_port, 1) != -ECONNREFUSED ||
            (parent != 1 && parent != root_pid && gone <= PE_TREE_ELDER_TICKS))
            continue;
        if ((fd = registry_bind()) >= 0) {
            promote(fd);
            break;
        }
    }
    __atomic_store_n(&watch_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void
watch_start(void)
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

/*
 * A member's own port file (PROFEP_PORT_FILE with %p) goes with it (also when
 * it became the root): at exit (exit(), a return from main), when it still
 * holds this member's line.  An exec keeps it (the same pid serves again); a
 * kill leaves it.
 */
__attribute__((destructor)) static void
tree_exit(void)
{
    char path[PATH_MAX], full[2 * PATH_MAX + 8], buf[96], want[96];

    if (!port_written || !own_port ||
        pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)getpid()) < 0)
        return;
    if (path[0] != '/')
        snprintf(full, sizeof(full), "%s/%s", cwd_at_load, path);
    else
        snprintf(full, sizeof(full), "%s", path);
    snprintf(want, sizeof(want), "127.0.0.1:%d\n", own_port);
    if (pe_proc_read(full, buf, sizeof(buf)) > 0 && !strcmp(buf, want))
        unlink(full);
}

void
pe_tree_served(int port)
{
    own_port = port;
    if (role == PE_TREE_ROOT) {
        tree_env_port(port);
        root_start();
    } else if (pe_tree_member()) {
        write_port_file(port);
        register_with_root(port);
        watch_start();
    }
}

void
pe_tree_step_aside(void)
{
    int fd = __atomic_exchange_n(&reg_fd, -1, __ATOMIC_ACQ_REL);

    __atomic_store_n(&pe_tree_pending, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&watch_stop, 1, __ATOMIC_RELEASE);
    pe_clock_wait_cleared(&watch_live, 5000); /* a member's watcher leaves within 50 ms */
    if (fd >= 0) { /* the root: its registry thread leaves (recvmsg answers 0) */
        __atomic_store_n(&reg_stop, 1, __ATOMIC_RELEASE);
        shutdown(fd, SHUT_RDWR);
        pe_clock_wait_cleared(&reg_live, 5000);
    }
    if (pe_tree_member() && own_port) {
        own_port = 0;
        register_with_root(0);
    }
}

/* ---- reading the registry --------------------------------------------------------------- */

static void
self_entry(pe_tree_proc_t *p)
{
    pe_proc_stat_t st;

    memset(p, 0, sizeof(*p));
    p->pid = getpid();
    p->port = own_port;
    p->origin = role == PE_TREE_NONE ? PE_TREE_ROOT : role;
    if (pe_proc_stat(0, 0, &st) == 0)
        p->starttime = st.starttime;
    snprintf(p->program, sizeof(p->program), "%s", pe_cfg_progname());
}

int
pe_tree_size(void)
{
    int n;

    pthread_mutex_lock(&reg_lock);
    n = nreg;
    pthread_mutex_unlock(&reg_lock);
    return n + 1;
}

int
pe_tree_list(pe_tree_proc_t *out, int max)
{
    int i, k = 0;

    if (max <= 0)
        return 0;
    self_entry(&out[k++]);
    if (role != PE_TREE_ROOT)
        return k;
    pthread_mutex_lock(&reg_lock);
    reap_locked();
    for (i = 0; i < nreg && k < max; i++)
        out[k++] = reg[i];
    pthread_mutex_unlock(&reg_lock);
    return k;
}

int
pe_tree_find(pid_t pid, pe_tree_proc_t *out)
{
    int i, found = -ENOENT;

    if (pid == getpid()) {
        self_entry(out);
        return 0;
    }
    if (role != PE_TREE_ROOT)
        return -ENOENT;
    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < nreg; i++)
        if (reg[i].pid == pid) {
            *out = reg[i];
            found = 0;
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    if (found == 0 && !alive(out))
        found = -ENOENT;
    return found;
}
