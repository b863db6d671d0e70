/*
 * tree_hooks.c: the blocking calls that fd_hooks.c does not already
 * interpose (epoll_wait, epoll_pwait, select, pselect, ppoll, recvfrom,
 * recvmsg), each only a safe point for a pending fork child of a process
 * tree (tree.h) in front of the real call.  fd_hooks.c's poll, accept,
 * accept4, read and recv are safe points too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../http/http.h"
#include "events.h"
#include "guard.h"
#include "pe.h"
#include "tree.h"

static struct {
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
} real;

#define REAL(f) __atomic_load_n(&real.f, __ATOMIC_RELAXED)

void
pe_tree_safe_point(int long_wait)
{
    int saved = errno;

    /* Never on our threads, in our unwinder, in a vfork child, or under our
       guard (a libc call of ours is in progress further up). */
    if (pe_tls.internal || pe_tls.in_unwind || pe_tls.guard || pe_event_foreign())
        return;
    if (pe_tree_start_due(long_wait)) {
        pe_guard_enter();
        (void)pe_http_start(); /* our thread binds and registers; says nothing on failure */
        pe_guard_exit();
    }
    errno = saved;
}

/* Before main (after pe_init); a call made earlier by another library's
   constructor takes the system call itself. */
__attribute__((constructor(102))) static void
tree_hooks_init(void)
{
#define R(f) __atomic_store_n(&real.f, (__typeof__(real.f))dlsym(RTLD_NEXT, #f), __ATOMIC_RELAXED)
    R(epoll_wait);
    R(epoll_pwait);
    R(select);
    R(pselect);
    R(ppoll);
    R(recvfrom);
    R(recvmsg);
#undef R
}

/* The kernel's sigset for the p* calls' system calls: 64 signals. */
#define PE_KSIGSET 8

PE_EXPORT int
epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    int (*f)(int, struct epoll_event *, int, int) = REAL(epoll_wait);

    PE_TREE_SAFE_POINT_WAIT(PE_TREE_LONG_MS(timeout));
    return f ? f(fd, ev, max, timeout)
             : (int)syscall(SYS_epoll_pwait, fd, ev, max, timeout, NULL, PE_KSIGSET);
}

PE_EXPORT int
epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
    int (*f)(int, struct epoll_event *, int, int, const sigset_t *) = REAL(epoll_pwait);

    PE_TREE_SAFE_POINT_WAIT(PE_TREE_LONG_MS(timeout));
    return f ? f(fd, ev, max, timeout, mask)
             : (int)syscall(SYS_epoll_pwait, fd, ev, max, timeout, mask, PE_KSIGSET);
}

PE_EXPORT int
select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    int (*f)(int, fd_set *, fd_set *, fd_set *, struct timeval *) = REAL(select);
    struct timespec ts;

    PE_TREE_SAFE_POINT_WAIT(!tv || tv->tv_sec >= 1);
    if (f)
        return f(n, r, w, e, tv);
    if (tv) {
        ts.tv_sec = tv->tv_sec;
        ts.tv_nsec = tv->tv_usec * 1000;
    }
    return (int)syscall(SYS_pselect6, n, r, w, e, tv ? &ts : NULL, NULL);
}

PE_EXPORT int
pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask)
{
    int (*f)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *) =
        REAL(pselect);
    struct {
        const sigset_t *set;
        size_t len;
    } km = {mask, PE_KSIGSET};

    PE_TREE_SAFE_POINT_WAIT(!ts || ts->tv_sec >= 1);
    return f ? f(n, r, w, e, ts, mask)
             : (int)syscall(SYS_pselect6, n, r, w, e, ts, mask ? &km : NULL);
}

PE_EXPORT int
ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) = REAL(ppoll);

    PE_TREE_SAFE_POINT_WAIT(!ts || ts->tv_sec >= 1);
    return f ? f(fds, n, ts, mask) : (int)syscall(SYS_ppoll, fds, n, ts, mask, PE_KSIGSET);
}

PE_EXPORT ssize_t
recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *a, socklen_t *alen)
{
    ssize_t (*f)(int, void *, size_t, int, struct sockaddr *, socklen_t *) = REAL(recvfrom);

    PE_TREE_SAFE_POINT();
    return f ? f(fd, buf, len, flags, a, alen)
             : syscall(SYS_recvfrom, fd, buf, len, flags, a, alen);
}

PE_EXPORT ssize_t
recvmsg(int fd, struct msghdr *m, int flags)
{
    ssize_t (*f)(int, struct msghdr *, int) = REAL(recvmsg);

    PE_TREE_SAFE_POINT();
    return f ? f(fd, m, flags) : syscall(SYS_recvmsg, fd, m, flags);
}
