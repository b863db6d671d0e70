/*
 * tree_registry.c: the process tree's registry (tree_int.h): the root's
 * table of members and the thread that receives their datagrams on the
 * tree's abstract socket, a member's registration, and the reading of the
 * table (pe_tree_size, pe_tree_list, pe_tree_find).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "proc.h"
#include "threads.h"
#include "tree_int.h"

static int reg_fd = -1, reg_stop; /* its socket; pe_tree_step_aside: the thread leaves */
static int reg_live;              /* the registry thread is started and has not left */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Grown by doubling as members register (most programs have none): under
   `ulimit -v` a table of PE_TREE_MAX in our data was 352 KiB of the
   program's address space. */
static pe_tree_proc_t *reg;
static int reg_cap;
static int nreg;

PE_SIGSAFE void
pe_tree_reg_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    /* A member never reads the registry; whoever held its lock is gone. */
    memcpy(&reg_lock, &fresh, sizeof(reg_lock));
    nreg = 0;
    reg = NULL; /* the parent's copy stays behind: no free() here */
    reg_cap = 0;
    reg_fd = -1; /* the root's socket: never shut from a child */
    reg_live = 0;
}

int
pe_tree_reg_rearm(void)
{
    if (__atomic_load_n(&reg_live, __ATOMIC_ACQUIRE))
        return -1;
    __atomic_store_n(&reg_stop, 0, __ATOMIC_RELEASE);
    return 0;
}

int
pe_tree_reg_take_fd(void)
{
    return __atomic_exchange_n(&reg_fd, -1, __ATOMIC_ACQ_REL);
}

void
pe_tree_reg_stop(int fd)
{
    /* the root: its registry thread leaves (recvmsg answers 0) */
    __atomic_store_n(&reg_stop, 1, __ATOMIC_RELEASE);
    shutdown(fd, SHUT_RDWR);
    pe_clock_wait_cleared(&reg_live, 5000);
}

/* ---- the registry (root) ---------------------------------------------------------------- */

static int
alive(const pe_tree_proc_t *p)
{
    pe_proc_stat_t st;

    return pe_proc_stat(p->pid, 0, &st) == 0 && st.starttime == p->starttime && st.state != 'Z' &&
           st.state != 'X';
}

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

int
pe_tree_reg_bind(void)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, pe_tree_self.root_pid, pe_tree_self.nonce);
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

void
pe_tree_reg_start(int fd)
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

void
pe_tree_reg_root_start(void)
{
    int fd = pe_tree_reg_bind();

    if (fd < 0) {
        pe_log_warn("process tree unavailable (cannot bind its socket: %s); children are "
                    "served on their own ports only",
                    strerror(-fd));
        return;
    }
    pe_tree_reg_start(fd);
}

/* ---- a member ------------------------------------------------------------------------- */

int
pe_tree_reg_send(int port, int tries_max)
{
    struct sockaddr_un a;
    socklen_t len = tree_addr(&a, pe_tree_self.root_pid, pe_tree_self.nonce);
    struct timespec pause = {0, 50 * 1000000L};
    char msg[160];
    int fd, n, tries, err = -EAGAIN;

    n = snprintf(msg, sizeof(msg), "PEv1 %d %d %d %.63s", (int)getpid(), port, pe_tree_self.role,
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

void
pe_tree_reg_join(int port)
{
    /* The root may still be starting (an exec'd child is quick), or its queue
       full (hundreds of children at once): retry for about five seconds. */
    (void)pe_tree_reg_send(port, port ? 100 : 1);
}

/* ---- reading the registry --------------------------------------------------------------- */

static void
self_entry(pe_tree_proc_t *p)
{
    pe_proc_stat_t st;

    memset(p, 0, sizeof(*p));
    p->pid = getpid();
    p->port = pe_tree_self.own_port;
    p->origin = pe_tree_self.role == PE_TREE_NONE ? PE_TREE_ROOT : pe_tree_self.role;
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
    if (pe_tree_self.role != PE_TREE_ROOT)
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
    if (pe_tree_self.role != PE_TREE_ROOT)
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
