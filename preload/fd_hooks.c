/*
 * fd_hooks.c: the interposers that keep our descriptors (preload/fd.h) out
 * of the program's way: close, close_range, closefrom, dup2 and dup3 from
 * the program; socket, accept, pipe and the calls our code makes on its
 * descriptors, translated when the program moved one.  The registry and its
 * helpers live in preload/fd.c.  poll, accept, accept4, read and recv are
 * also safe points for a fork child of a process tree (tree.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd.h"
#include "fd_int.h"
#include "tree.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- closing ------------------------------------------------------------------------ */

PE_EXPORT int
close(int fd)
{
    pe_fd_slot_t *s;
    int r;

    if (pe_fd_ours_ctx()) {
        if (!(s = pe_fd_by_virt(fd)))
            return pe_fd_sys_close(fd);
        r = __atomic_load_n(&s->real, __ATOMIC_RELAXED);
        pe_fd_release(s);
        return r >= 0 ? pe_fd_sys_close(r) : 0;
    }
    pe_fd_close_begin(); /* none of ours being born at a low number (fd.h) */
    if (pe_fd_ours_at(fd) || pe_fd_bulk_is(fd))
        r = 0; /* the program's close of ours "succeeds"; the number stays taken */
    else
        r = pe_fd_sys_close(fd);
    pe_fd_close_end();
    return r;
}

static int
sys_close_range1(unsigned first, unsigned last, int flags)
{
    int (*f)(unsigned, unsigned, int) = PE_FD_REAL(close_range);
    return f ? f(first, last, flags) : (int)syscall(SYS_close_range, first, last, flags);
}

/* [first, last] but the ones held in bulk (fd.h), lowest first. */
static int
sys_close_range(unsigned first, unsigned last, int flags)
{
    int b, rc;

    while (first <= last && (b = pe_fd_bulk_next(first, last)) >= 0) {
        if ((unsigned)b > first && (rc = sys_close_range1(first, (unsigned)b - 1, flags)) != 0)
            return rc;
        if ((unsigned)b == last)
            return 0;
        first = (unsigned)b + 1;
    }
    return first <= last ? sys_close_range1(first, last, flags) : 0;
}

static int
close_range_program(unsigned first, unsigned last, int flags)
{
    int keep[PE_FD_SLOTS], n = 0, i, j, rc = 0, called = 0;
    unsigned lo = first;

    if (last < (unsigned)__atomic_load_n(&pe_fd_lowest, __ATOMIC_RELAXED))
        return sys_close_range1(first, last, flags);
    for (i = 0; i < pe_fd_used(); i++) {
        int r = __atomic_load_n(&pe_fd_slots[i].real, __ATOMIC_RELAXED);
        if (__atomic_load_n(&pe_fd_slots[i].state, __ATOMIC_ACQUIRE) == S_LIVE && r >= 0 &&
            (unsigned)r >= first && (unsigned)r <= last && pe_fd_ours_at(r)) {
            for (j = n++; j > 0 && keep[j - 1] > r; j--) /* sorted as they come */
                keep[j] = keep[j - 1];
            keep[j] = r;
        }
    }
    if (!n)
        return sys_close_range(first, last, flags);
    /* Close the gaps around ours, lowest first, as the one call would. */
    for (i = 0; i < n && rc == 0; i++) {
        if ((unsigned)keep[i] > lo) {
            rc = sys_close_range(lo, (unsigned)keep[i] - 1, flags);
            called = 1;
        }
        lo = (unsigned)keep[i] + 1;
    }
    if (rc == 0 && lo <= last && lo != 0) {
        rc = sys_close_range(lo, last, flags);
        called = 1;
    }
    if (rc == 0 && !called && (flags & CLOSE_RANGE_UNSHARE))
        rc = (int)syscall(SYS_unshare, 0x00000400 /* CLONE_FILES */);
    return rc;
}

PE_EXPORT int
close_range(unsigned first, unsigned last, int flags)
{
    int rc;

    if (pe_fd_ours_ctx() || (flags & CLOSE_RANGE_CLOEXEC) || first > last)
        return sys_close_range1(first, last, flags);
    pe_fd_close_begin(); /* as close */
    rc = close_range_program(first, last, flags);
    pe_fd_close_end();
    return rc;
}

PE_EXPORT void
closefrom(int lowfd)
{
    struct rlimit rl;
    long fd, max = 65536;

    if (lowfd < 0)
        lowfd = 0;
    if (close_range((unsigned)lowfd, ~0U, 0) == 0)
        return;
    /* No close_range (kernel < 5.9): one descriptor at a time, ours kept. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
        max = (long)rl.rlim_cur;
    for (fd = lowfd; fd < max; fd++)
        (void)close((int)fd); /* ours kept, as close keeps them */
}

/* ---- replacing: dup2 and dup3 onto one of ours ----------------------------------- */

/*
 * The program gets exactly what it asked for: newfd becomes a copy of oldfd.
 * Ours is first copied to another high number, and our code, which still
 * holds newfd's number, is from then on served through the copy.  When no
 * copy can be made (descriptor limit), ours is given up (a listening socket
 * says so) and the program still gets its dup2.
 */
static void
move_away(int newfd)
{
    pe_fd_slot_t *s = pe_fd_ours_at(newfd);
    int n;

    if (!s)
        return;
    n = pe_fd_dup_high(newfd, pe_fd_high_base());
    if (n < 0) {
        pe_fd_lost(s, __atomic_load_n(&s->virt, __ATOMIC_RELAXED));
        return;
    }
    __atomic_store_n(&pe_fd_translating, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->real, n, __ATOMIC_RELEASE);
}

/* Is newfd one of ours (table or bulk)?  Asked first: the program's other
   dup2s cost no system call of ours. */
static int
held(int newfd)
{
    return pe_fd_by_real(newfd) || pe_fd_bulk_held(newfd);
}

/* newfd is about to become the program's copy: one of ours in the table moves
   away, one held in bulk is forgotten (fd.h). */
static void
replacing(int newfd)
{
    if (pe_fd_by_real(newfd))
        move_away(newfd);
    else
        pe_fd_bulk_take(newfd);
}

PE_EXPORT int
dup2(int oldfd, int newfd)
{
    int (*f)(int, int) = PE_FD_REAL(dup2);
    int rc;

    if (pe_fd_ours_ctx())
        return f ? f(oldfd, newfd) : (int)syscall(SYS_dup2, oldfd, newfd);
    pe_fd_close_begin(); /* newfd may be one of ours being born (fd.h) */
    if (oldfd != newfd && held(newfd) && pe_fd_sys_fcntl(oldfd, F_GETFD, 0) >= 0)
        replacing(newfd);
    rc = f ? f(oldfd, newfd) : (int)syscall(SYS_dup2, oldfd, newfd);
    pe_fd_close_end();
    return rc;
}

PE_EXPORT int
dup3(int oldfd, int newfd, int flags)
{
    int (*f)(int, int, int) = PE_FD_REAL(dup3);
    int rc;

    if (pe_fd_ours_ctx())
        return f ? f(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
    pe_fd_close_begin(); /* as dup2 */
    if (oldfd != newfd && held(newfd) && pe_fd_sys_fcntl(oldfd, F_GETFD, 0) >= 0)
        replacing(newfd);
    rc = f ? f(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
    pe_fd_close_end();
    return rc;
}

/* ---- creating: our code's new descriptors go high ---------------------------------- */

PE_EXPORT int
socket(int domain, int type, int protocol)
{
    int (*f)(int, int, int) = PE_FD_REAL(socket);
    int fd, saved;

    if (!pe_fd_ours_ctx())
        return f ? f(domain, type, protocol) : (int)syscall(SYS_socket, domain, type, protocol);
    type |= SOCK_CLOEXEC; /* never inherited by a program's child, not even briefly */
    pe_fd_born_begin();   /* until it is moved up and registered (fd.h) */
    fd = f ? f(domain, type, protocol) : (int)syscall(SYS_socket, domain, type, protocol);
    fd = pe_fd_adopt(fd, K_SOCK);
    saved = errno;
    pe_fd_born_end();
    errno = saved;
    return fd;
}

static int
accept_ours(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    int (*f)(int, struct sockaddr *, socklen_t *, int) = PE_FD_REAL(accept4);
    struct timespec pause = {0, 100 * 1000000L};
    pe_fd_slot_t *s;
    int c, r = fd, saved;

    if (__atomic_load_n(&pe_fd_translating, __ATOMIC_ACQUIRE) && (s = pe_fd_by_virt(fd)))
        r = __atomic_load_n(&s->real, __ATOMIC_RELAXED);
    if (r < 0) {
        errno = EBADF;
        return -1;
    }
    pe_fd_born_begin(); /* as socket (after the poll that said one waits: quick) */
    c = f ? f(r, addr, len, flags | SOCK_CLOEXEC)
          : (int)syscall(SYS_accept4, r, addr, len, flags | SOCK_CLOEXEC);
    if (c >= 0)
        c = pe_fd_adopt(c, K_CONN);
    saved = errno;
    pe_fd_born_end();
    errno = saved;
    if (c < 0) {
        /* The program holds every descriptor it may: civetweb would retry at
           once, forever (the connection stays queued); retry 10 times a second. */
        if (errno == EMFILE || errno == ENFILE) {
            nanosleep(&pause, NULL);
            errno = saved;
        }
        return -1;
    }
    return c;
}

PE_EXPORT int
accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    int (*f)(int, struct sockaddr *, socklen_t *) = PE_FD_REAL(accept);

    if (pe_fd_ours_ctx())
        return accept_ours(fd, addr, len, 0);
    PE_TREE_SAFE_POINT();
    return f ? f(fd, addr, len) : (int)syscall(SYS_accept, fd, addr, len);
}

PE_EXPORT int
accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    int (*f)(int, struct sockaddr *, socklen_t *, int) = PE_FD_REAL(accept4);

    if (pe_fd_ours_ctx())
        return accept_ours(fd, addr, len, flags);
    PE_TREE_SAFE_POINT();
    return f ? f(fd, addr, len, flags) : (int)syscall(SYS_accept4, fd, addr, len, flags);
}

PE_EXPORT int
pipe2(int fds[2], int flags)
{
    int (*f)(int *, int) = PE_FD_REAL(pipe2);
    int rc, saved;

    if (!pe_fd_ours_ctx())
        return f ? f(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
    flags |= O_CLOEXEC;
    pe_fd_born_begin(); /* as socket */
    rc = f ? f(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
    if (rc == 0) {
        fds[0] = pe_fd_adopt(fds[0], K_PIPE);
        fds[1] = pe_fd_adopt(fds[1], K_PIPE);
    }
    saved = errno;
    pe_fd_born_end();
    errno = saved;
    return rc;
}

PE_EXPORT int
pipe(int fds[2])
{
    int (*f)(int *) = PE_FD_REAL(pipe);

    if (pe_fd_ours_ctx())
        return pipe2(fds, 0);
    return f ? f(fds) : (int)syscall(SYS_pipe, fds);
}

/* ---- our code's calls on a descriptor that may have moved ------------------------------ */

/*
 * Only calls made from our code translate (one TLS load when nothing ever
 * moved); the program's own calls go straight through.  poll also drops a
 * socket of ours found closed or replaced behind our back (POLLNVAL, or a
 * different file at its number): civetweb would otherwise spin on it, or
 * accept the program's connections.
 */
PE_EXPORT int
poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    int (*f)(struct pollfd *, nfds_t, int) = PE_FD_REAL(poll);
    int saved[8], rc;
    pe_fd_slot_t *s[8];
    nfds_t i;

    if (!pe_fd_ours_ctx()) /* a fork child of a process tree may start here (tree.h) */
        PE_TREE_SAFE_POINT_WAIT(PE_TREE_LONG_MS(timeout));
    if (!pe_fd_ours_ctx() || nfds > 8 || !__atomic_load_n(&pe_fd_owner, __ATOMIC_RELAXED))
        return f ? f(fds, nfds, timeout) : (int)syscall(SYS_poll, fds, nfds, timeout);
    for (i = 0; i < nfds; i++) {
        saved[i] = fds[i].fd;
        s[i] = fds[i].fd >= 0 ? pe_fd_by_virt(fds[i].fd) : NULL;
        if (!s[i])
            continue;
        fds[i].fd = __atomic_load_n(&s[i]->real, __ATOMIC_ACQUIRE);
        if (fds[i].fd >= 0 && s[i]->kind != K_PIPE && !pe_fd_same_file(s[i], fds[i].fd)) {
            /* Moved by a dup2 just now (the number is being replaced): use the
               new place; otherwise it is not ours any more: never polled. */
            if (__atomic_load_n(&s[i]->real, __ATOMIC_ACQUIRE) != fds[i].fd)
                fds[i].fd = __atomic_load_n(&s[i]->real, __ATOMIC_ACQUIRE);
            else {
                pe_fd_lost(s[i], saved[i]);
                fds[i].fd = -1;
            }
        }
    }
    rc = f ? f(fds, nfds, timeout) : (int)syscall(SYS_poll, fds, nfds, timeout);
    for (i = 0; i < nfds; i++) {
        /* The kernel looks the number up again at each pass: a slot moved
           meanwhile says nothing of ours (the caller polls again). */
        if (s[i] && fds[i].fd >= 0 && fds[i].fd != __atomic_load_n(&s[i]->real, __ATOMIC_ACQUIRE)) {
            if (fds[i].revents && rc > 0)
                rc--;
            fds[i].revents = 0;
        } else if (s[i] && fds[i].fd >= 0 && (fds[i].revents & POLLNVAL) && s[i]->kind != K_PIPE) {
            pe_fd_lost(s[i], saved[i]);
            if (rc > 0)
                rc--;
            fds[i].revents = 0;
        }
        fds[i].fd = saved[i];
    }
    return rc;
}

PE_EXPORT ssize_t
read(int fd, void *buf, size_t n)
{
    ssize_t (*f)(int, void *, size_t) = PE_FD_REAL(read);

    PE_TREE_SAFE_POINT();
    fd = pe_fd_xlate(fd);
    return f ? f(fd, buf, n) : syscall(SYS_read, fd, buf, n);
}

PE_EXPORT ssize_t
write(int fd, const void *buf, size_t n)
{
    ssize_t (*f)(int, const void *, size_t) = PE_FD_REAL(write);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, buf, n) : syscall(SYS_write, fd, buf, n);
}

PE_EXPORT ssize_t
recv(int fd, void *buf, size_t n, int flags)
{
    ssize_t (*f)(int, void *, size_t, int) = PE_FD_REAL(recv);

    PE_TREE_SAFE_POINT();
    fd = pe_fd_xlate(fd);
    return f ? f(fd, buf, n, flags) : syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
}

PE_EXPORT ssize_t
send(int fd, const void *buf, size_t n, int flags)
{
    ssize_t (*f)(int, const void *, size_t, int) = PE_FD_REAL(send);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, buf, n, flags) : syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}

PE_EXPORT int
shutdown(int fd, int how)
{
    int (*f)(int, int) = PE_FD_REAL(shutdown);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, how) : (int)syscall(SYS_shutdown, fd, how);
}

PE_EXPORT int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    int (*f)(int, int, int, const void *, socklen_t) = PE_FD_REAL(setsockopt);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, level, name, val, len)
             : (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

PE_EXPORT int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    int (*f)(int, int, int, void *, socklen_t *) = PE_FD_REAL(getsockopt);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, level, name, val, len)
             : (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

PE_EXPORT int
getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
    int (*f)(int, struct sockaddr *, socklen_t *) = PE_FD_REAL(getsockname);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, addr, len) : (int)syscall(SYS_getsockname, fd, addr, len);
}

PE_EXPORT int
getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
    int (*f)(int, struct sockaddr *, socklen_t *) = PE_FD_REAL(getpeername);

    fd = pe_fd_xlate(fd);
    return f ? f(fd, addr, len) : (int)syscall(SYS_getpeername, fd, addr, len);
}

/* civetweb's fcntl (F_SETFL on its connections); glibc reads the argument as a pointer too. */
PE_EXPORT int
fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    void *arg;

    va_start(ap, cmd);
    arg = va_arg(ap, void *);
    va_end(ap);
    return pe_fd_sys_fcntl(pe_fd_xlate(fd), cmd, (long)arg);
}

/* After pe_init (101): resolve the real functions even where the server is off. */
__attribute__((constructor(102))) static void
fd_init(void)
{
    pe_fd_note_stderr();
}
