/*
 * sigsafe.c: whether a thread may be signalled without the program seeing
 * it (sigsafe.h).  Owns the list of system calls our SA_RESTART handler lets
 * the kernel restart transparently; everything else blocked is left alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "../preload/proc.h"
#include "../stack/quiet.h"
#include "sigsafe.h"

/* Names for the reason line; the rest go by number. */
static const struct {
    long nr;
    const char *name;
} names[] = {
#ifdef SYS_nanosleep
    {SYS_nanosleep, "nanosleep"},
#endif
#ifdef SYS_poll
    {SYS_poll, "poll"},
#endif
#ifdef SYS_select
    {SYS_select, "select"},
#endif
#ifdef SYS_epoll_wait
    {SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_pause
    {SYS_pause, "pause"},
#endif
    {SYS_clock_nanosleep, "clock_nanosleep"},
    {SYS_futex, "futex"},
    {SYS_ppoll, "ppoll"},
    {SYS_pselect6, "pselect6"},
    {SYS_epoll_pwait, "epoll_pwait"},
    {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
    {SYS_rt_sigsuspend, "rt_sigsuspend"},
    {SYS_read, "read"},
    {SYS_readv, "readv"},
    {SYS_write, "write"},
    {SYS_writev, "writev"},
    {SYS_recvfrom, "recvfrom"},
    {SYS_recvmsg, "recvmsg"},
    {SYS_recvmmsg, "recvmmsg"},
    {SYS_sendto, "sendto"},
    {SYS_sendmsg, "sendmsg"},
    {SYS_accept, "accept"},
    {SYS_accept4, "accept4"},
    {SYS_connect, "connect"},
    {SYS_io_getevents, "io_getevents"},
    {SYS_msgrcv, "msgrcv"},
    {SYS_semtimedop, "semtimedop"},
};

static void
name_of(long nr, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].nr == nr) {
            snprintf(buf, len, "%s", names[i].name);
            return;
        }
    snprintf(buf, len, "system call %ld", nr);
}

/* A socket blocked on fd with its timeout (SO_RCVTIMEO or SO_SNDTIMEO) unset: 1; else 0. */
static int
socket_untimed(int fd, int opt)
{
    struct timeval tv;
    socklen_t len = sizeof(tv);

    if (getsockopt(fd, SOL_SOCKET, opt, &tv, &len) < 0)
        return 0;
    return tv.tv_sec == 0 && tv.tv_usec == 0; /* with a timeout: EINTR (socket(7)) */
}

/*
 * read/write-like calls on fd: pipes, ttys, eventfds and other character or
 * anonymous files restart (-ERESTARTSYS); a socket only without a timeout;
 * a regular file only while in uninterruptible sleep (FUSE and network file
 * systems can answer EINTR).  fd is the program's: a close and reuse in
 * between is possible but would need both within microseconds.
 */
static int
fd_restarts(long fd, int opt, char state)
{
    struct stat sb;

    if (fd < 0 || fd > 0x7fffffff || fstat((int)fd, &sb) < 0)
        return 0;
    if (S_ISSOCK(sb.st_mode))
        return socket_untimed((int)fd, opt);
    if (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode))
        return state == 'D';
    return S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode) || (sb.st_mode & S_IFMT) == 0;
}

/* 1 when a handled signal makes blocked call nr (arguments a) restart unseen. */
static int
restarts(long nr, const unsigned long long *a, char state)
{
    switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_preadv:
    case SYS_preadv2: return fd_restarts((long)a[0], SO_RCVTIMEO, state);
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_pwritev:
    case SYS_pwritev2: return fd_restarts((long)a[0], SO_SNDTIMEO, state);
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4: return socket_untimed((int)a[0], SO_RCVTIMEO);
    case SYS_sendto:
    case SYS_sendmsg: return socket_untimed((int)a[0], SO_SNDTIMEO);
    case SYS_wait4:
    case SYS_waitid:
    case SYS_flock: return 1;
    case SYS_fcntl: return a[1] == F_SETLKW || a[1] == F_OFD_SETLKW;
    case SYS_futex: {
        /* an untimed wait restarts; a timed one ends in EINTR */
        int op = (int)(a[1] & FUTEX_CMD_MASK);
        return (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) && a[3] == 0;
    }
    default: return 0;
    }
}

/* A blocked syscall line: the number (-1 none) and up to 8 hex fields after it; how many. */
static int
parse_line(const char *line, long *nr, unsigned long long *a)
{
    char *p, *end;
    int n = 0;

    *nr = strtol(line, &p, 10);
    if (p == line)
        *nr = -1;
    for (; n < 8; n++) {
        a[n] = strtoull(p, &end, 16);
        if (end == p)
            break;
        p = end;
    }
    return n;
}

/* Past this CPU time since it was seen blocked, a running thread is out of that call. */
#define LEFT_CALL_NS (2 * 1000000LL)

/*
 * A running thread: it may be on its way out of a call it was seen blocked
 * in (woken, waiting for a CPU or preempted in the kernel), and poll or
 * select still end in EINTR when a signal comes before their last look.
 * 1 when it may be signalled, else 0 with out filled.
 */
static int
running_safe(pid_t tid, pe_sigsafe_t *out)
{
    char line[256], name[32];
    unsigned long long a[8];
    int64_t ran;
    long nr;
    int n;

    if (!pe_quiet_last_call(tid, line, sizeof(line), &ran))
        return 1; /* not seen blocked: running since before our first look */
    if (ran >= LEFT_CALL_NS)
        return 1;
    n = parse_line(line, &nr, a);
    if (nr < 0 || (n == 8 && restarts(nr, a, 'R')))
        return 1;
    out->nr = nr;
    out->pc = n >= 2 ? (uintptr_t)a[n - 1] : 0;
    name_of(nr, name, sizeof(name));
    snprintf(out->why, sizeof(out->why),
             "not signalled: it just woke in %s, which a signal could still interrupt", name);
    return 0;
}

int
pe_sigsafe_check(pid_t tid, pe_sigsafe_t *out)
{
    char line[256], name[32];
    unsigned long long a[8];
    pe_proc_stat_t st;
    int rc, n;

    out->nr = -1;
    out->pc = 0;
    out->why[0] = '\0';
    rc = pe_proc_task_read(tid, "syscall", line, sizeof(line));
    if (rc == -ESRCH)
        return -ESRCH;
    if (rc < 0 || strncmp(line, "running", 7)) /* the state, where it matters */
        if (pe_proc_stat(0, tid, &st) < 0)
            st.state = '?';
    if (rc < 0) { /* not dumpable, say: the state alone */
        if (st.state == 'R')
            return running_safe(tid, out);
        snprintf(out->why, sizeof(out->why),
                 "not signalled: it waits (state %c) in a call /proc does not name", st.state);
        return 0;
    }
    if (!strncmp(line, "running", 7))
        return running_safe(tid, out);
    n = parse_line(line, &out->nr, a);
    if (n >= 2)
        out->pc = (uintptr_t)a[n - 1];
    if (out->nr < 0) { /* not in a system call (a page fault, a stop) */
        if (st.state != 'T' && st.state != 't')
            return 1;
        snprintf(out->why, sizeof(out->why), "not signalled: it is stopped");
        return 0;
    }
    if (n == 8 && restarts(out->nr, a, st.state))
        return 1;
    name_of(out->nr, name, sizeof(name));
    snprintf(out->why, sizeof(out->why),
             "not signalled: blocked in %s, which a signal would interrupt", name);
    return 0;
}
