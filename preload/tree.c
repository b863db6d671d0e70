/*
 * tree.c: the process tree (tree.h): roles, the fork child's safe point, the
 * root's registry and its receiving thread, a member's registration.
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

void
pe_tree_init(void)
{
    const char *v = getenv("PROFEP_TREE"), *pf = getenv("PROFEP_PORT_FILE");
    unsigned long long n;
    char buf[64];
    int pid;

    role = PE_TREE_NONE;
    if (!pe_cfg.children || pe_cfg.server_off)
        return; /* children off: nothing below us loads the library */
    if (pf && strstr(pf, "%p") && strlen(pf) < sizeof(port_tmpl)) {
        snprintf(port_tmpl, sizeof(port_tmpl), "%s", pf);
        if (pf[0] != '/' && !getcwd(cwd_at_load, sizeof(cwd_at_load)))
            port_tmpl[0] = '\0';
    }
    if (v && sscanf(v, "%d:%llx", &pid, &n) == 2 && pid > 0 && pid != getpid()) {
        role = PE_TREE_EXEC;
        root_pid = pid;
        nonce = n;
        return; /* kept in the environment: our own exec'd children join too */
    }
    /* Set before main, single-threaded: no getenv of the program races it. */
    role = PE_TREE_ROOT;
    root_pid = getpid();
    nonce = random_u64();
    snprintf(buf, sizeof(buf), "%d:%016llx", (int)root_pid, nonce);
    setenv("PROFEP_TREE", buf, 1);
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

static void
root_start(void)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, root_pid, nonce);
    pthread_attr_t attr;
    pthread_t t;
    int fd, one = 1, rcv = 1 << 20;

    /* Our thread: the descriptor is moved high and close-on-exec (fd.h). */
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0)
        return;
    (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    if (bind(fd, (struct sockaddr *)&a, len) < 0) {
        pe_log_warn("process tree unavailable (cannot bind its socket: %s); children are "
                    "served on their own ports only",
                    strerror(errno));
        close(fd);
        return;
    }
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
    (void)pe_portfile_write(full, "127.0.0.1", port); /* a member stays silent */
}

/* port 0: this member serves no more (pe_tree_step_aside). */
static void
register_with_root(int port)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, root_pid, nonce);
    struct timespec pause = {0, 50 * 1000000L};
    char msg[160];
    int fd, n, tries;

    n = snprintf(msg, sizeof(msg), "PEv1 %d %d %d %.63s", (int)getpid(), port, role,
                 pe_cfg_progname());
    if ((fd = socket(AF_UNIX, SOCK_DGRAM, 0)) < 0)
        return;
    /* The root may still be starting (an exec'd child is quick), or its queue
       full (hundreds of children at once): retry for about five seconds. */
    for (tries = 0; tries < (port ? 100 : 1); tries++) {
        if (sendto(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len) ==
            n)
            break;
        if (errno != EAGAIN && errno != ECONNREFUSED && errno != ENOENT && errno != ENOBUFS)
            break;
        nanosleep(&pause, NULL);
    }
    close(fd);
}

void
pe_tree_served(int port)
{
    own_port = port;
    if (role == PE_TREE_ROOT)
        root_start();
    else if (pe_tree_member()) {
        write_port_file(port);
        register_with_root(port);
    }
}

/* Until the thread clears *live as it leaves (5 s at most: a report or a
   profile under way finishes first). */
static void
wait_left(const int *live)
{
    for (int ms = 0; ms < 5000 && __atomic_load_n(live, __ATOMIC_ACQUIRE); ms++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

void
pe_tree_step_aside(void)
{
    int fd = __atomic_exchange_n(&reg_fd, -1, __ATOMIC_ACQ_REL);

    __atomic_store_n(&pe_tree_pending, 0, __ATOMIC_RELAXED);
    if (fd >= 0) { /* the root: its registry thread leaves (recvmsg answers 0) */
        __atomic_store_n(&reg_stop, 1, __ATOMIC_RELEASE);
        shutdown(fd, SHUT_RDWR);
        wait_left(&reg_live);
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
