/*
 * remote.c: one thread of the target, stopped and used (x86-64).
 *
 * PTRACE_SEIZE + PTRACE_INTERRUPT stop that thread only (no SIGSTOP to the
 * group).  A thread that was waiting in a system call stops with the call's
 * restart pending (rax = -ERESTARTSYS and kin, orig_rax = its number, rip just
 * past the `syscall` instruction).  We then run system calls in it by
 * pointing rip back at that instruction (rip - 2) and single-stepping it, and
 * one function call (pthread_create) on a stack of ours ending on an int3 we
 * catch.  orig_rax = -1 meanwhile, so the kernel's restart logic leaves our
 * registers alone; at the end every register and the FP state go back as
 * they were, and the kernel restarts the interrupted call itself (nanosleep's
 * restart block untouched): the program sees no EINTR and no short sleep.
 * Every signal stays blocked in that thread while we use it, so none is
 * delivered into our code; pending ones are delivered after, as they would be.
 *
 * epoll_wait and a few others answer a stop with -EINTR rather than a
 * restart code; for those we put -ERESTARTNOHAND back: the call restarts
 * unless a handler runs, exactly what a stop without a tracer does.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define PE_ERESTARTSYS 512
#define PE_ERESTARTNOINTR 513
#define PE_ERESTARTNOHAND 514
#define PE_ERESTART_RESTARTBLOCK 516

/* ---- memory -------------------------------------------------------------------- */

int
pe_mem_read(int memfd, uint64_t addr, void *buf, size_t len)
{
    ssize_t n = pread(memfd, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

int
pe_mem_write(int memfd, uint64_t addr, const void *buf, size_t len)
{
    ssize_t n = pwrite(memfd, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* ---- stops ------------------------------------------------------------------------ */

/* The next stop of tid within ms (< 0: no bound, a plain blocking wait: our
   own steps stop at once); -ETIMEDOUT, or -ESRCH when it is gone. */
static int
wait_stop(pid_t tid, int *status, int ms)
{
    while (ms < 0) {
        pid_t w = waitpid(tid, status, __WALL);
        if (w == tid)
            return WIFSTOPPED(*status) ? 0 : -ESRCH;
        if (w < 0 && errno != EINTR)
            return -ESRCH;
    }
    for (int waited = 0;; waited++) {
        pid_t w = waitpid(tid, status, __WALL | WNOHANG);
        if (w == tid)
            return WIFSTOPPED(*status) ? 0 : -ESRCH;
        if (w < 0 && errno != EINTR)
            return -ESRCH;
        if (ms >= 0 && waited >= ms * 10)
            return -ETIMEDOUT;
        struct timespec ts = {0, 100000L}; /* 0.1 ms */
        nanosleep(&ts, NULL);
    }
}

/* Calls that answer a stop with -EINTR (no restart code) and are safe to
   start again when nothing else interrupted them. */
static int
eintr_restartable(long nr)
{
    switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_rt_sigtimedwait:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_io_getevents: return 1;
    default: return 0;
    }
}

static int
in_text(const pe_obj_t *o, uint64_t pc)
{
    return o->text_lo && pc >= o->text_lo && pc < o->text_hi;
}

/* Why PTRACE_SEIZE failed, in words a user can act on. */
static void
not_permitted(pid_t pid, int err, char *why)
{
    char buf[16] = "";
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC), scope = -1;

    if (fd >= 0) {
        if (read(fd, buf, sizeof(buf) - 1) > 0)
            scope = atoi(buf);
        close(fd);
    }
    if (err != EPERM)
        snprintf(why, PE_WHY_LEN, "cannot trace pid %d: %s", (int)pid, strerror(err));
    else if (scope >= 3)
        snprintf(why, PE_WHY_LEN,
                 "not permitted: kernel.yama.ptrace_scope=3 forbids attaching to any process "
                 "(until reboot)");
    else if (scope >= 1 && geteuid() != 0)
        snprintf(why, PE_WHY_LEN,
                 "not permitted: kernel.yama.ptrace_scope=%d; run as root or with "
                 "CAP_SYS_PTRACE",
                 scope);
    else
        snprintf(why, PE_WHY_LEN,
                 "not permitted to trace pid %d (already traced, or root/CAP_SYS_PTRACE needed)",
                 (int)pid);
}

/* Let the thread go as it stopped (with the -EINTR fix when it applies). */
static void
let_go(pe_remote_t *r, int sig)
{
    ptrace(PTRACE_SETREGS, r->tid, 0, &r->saved);
    ptrace(PTRACE_DETACH, r->tid, 0, (void *)(long)sig);
}

int
pe_remote_stop(pe_remote_t *r, pid_t pid, pid_t tid, const pe_target_t *t, char *why)
{
    int st, rc, sig, event;
    unsigned char insn[2];
    struct iovec iov;

    r->pid = pid;
    r->tid = tid;
    r->masked = 0;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
        if (errno == ESRCH)
            return -EAGAIN; /* the thread is gone */
        rc = -errno;
        not_permitted(pid, errno, why);
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &r->t_stop);
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
        ptrace(PTRACE_DETACH, tid, 0, 0);
        return -EAGAIN;
    }
    /* A thread in an uninterruptible wait (D) stops when the wait ends. */
    if ((rc = wait_stop(tid, &st, 2000)) < 0) {
        if (rc == -ESRCH)
            return -EAGAIN;
        snprintf(why, PE_WHY_LEN, "thread %d of pid %d did not stop within 2 s", (int)tid,
                 (int)pid);
        return -ETIMEDOUT; /* the caller exits: the kernel detaches us */
    }
    sig = WSTOPSIG(st);
    event = st >> 16;
    if (event != PTRACE_EVENT_STOP) {
        /* a signal arrived first: deliver it untouched, try another time */
        ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
        return -EAGAIN;
    }
    if (ptrace(PTRACE_GETREGS, tid, 0, &r->saved) < 0) {
        ptrace(PTRACE_DETACH, tid, 0, 0);
        return -EAGAIN;
    }
    if (sig != SIGTRAP) { /* a group stop (SIGSTOP) meanwhile: it stays stopped */
        ptrace(PTRACE_DETACH, tid, 0, 0);
        return -EAGAIN;
    }
    /* A stop of ours turned epoll_wait & co into -EINTR: make it what the
       kernel does for a stop without us (restart unless a handler runs). */
    if ((long)r->saved.rax == -EINTR && (long)r->saved.orig_rax >= 0 &&
        eintr_restartable((long)r->saved.orig_rax))
        r->saved.rax = (unsigned long long)-PE_ERESTARTNOHAND;
    /* Usable only in a system call, at a `syscall` instruction inside libc
       (not ld.so, not a raw syscall of a thread libc may not know). */
    if ((long)r->saved.orig_rax < 0 || !in_text(&t->libc, r->saved.rip - 2) ||
        pe_mem_read(r->memfd, r->saved.rip - 2, insn, 2) < 0 || insn[0] != 0x0f ||
        insn[1] != 0x05 || r->saved.fs_base == 0) {
        let_go(r, 0);
        return -EAGAIN;
    }
    iov.iov_base = r->xstate;
    iov.iov_len = sizeof(r->xstate);
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) < 0) {
        iov.iov_len = sizeof(r->xstate);
        if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov) < 0) {
            let_go(r, 0);
            snprintf(why, PE_WHY_LEN, "cannot read the FP state of thread %d", (int)tid);
            return -EIO;
        }
        r->xlen = (size_t)-1 - iov.iov_len; /* marks NT_PRFPREG */
    } else {
        r->xlen = iov.iov_len;
    }
    return 0;
}

/* ---- using the stopped thread ---------------------------------------------------- */

/* Something other than our trap stopped it: deliver what came, put it back, leave. */
static int
unexpected(pe_remote_t *r, int st, const char *what, char *why)
{
    int sig = WIFSTOPPED(st) && (st >> 16) == 0 ? WSTOPSIG(st) : 0;

    snprintf(why, PE_WHY_LEN,
             "thread %d of pid %d was interrupted during %s (signal %d); it "
             "was put back as it was; try again",
             (int)r->tid, (int)r->pid, what, sig);
    (void)pe_remote_release(r, why + strlen(why));
    return -EINTR;
}

int
pe_remote_syscall(pe_remote_t *r, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                  uint64_t a5, uint64_t a6, long *ret, char *why)
{
    struct user_regs_struct regs = r->saved;
    int st, rc;

    regs.rax = (unsigned long long)nr;
    regs.rdi = a1;
    regs.rsi = a2;
    regs.rdx = a3;
    regs.r10 = a4;
    regs.r8 = a5;
    regs.r9 = a6;
    regs.rip = r->saved.rip - 2;
    regs.orig_rax = (unsigned long long)-1; /* no restart of the interrupted call in ours */
    if (ptrace(PTRACE_SETREGS, r->tid, 0, &regs) < 0 ||
        ptrace(PTRACE_SINGLESTEP, r->tid, 0, 0) < 0) {
        snprintf(why, PE_WHY_LEN, "ptrace: %s", strerror(errno));
        return -EIO;
    }
    if ((rc = wait_stop(r->tid, &st, -1)) < 0) {
        snprintf(why, PE_WHY_LEN, "thread %d of pid %d: %s during a system call of ours",
                 (int)r->tid, (int)r->pid, rc == -ESRCH ? "exited" : "no stop");
        return rc;
    }
    if (WSTOPSIG(st) != SIGTRAP || (st >> 16) != 0)
        return unexpected(r, st, "a system call of ours", why);
    if (ptrace(PTRACE_GETREGS, r->tid, 0, &regs) < 0)
        return -EIO;
    *ret = (long)regs.rax;
    return 0;
}

int
pe_remote_mask(pe_remote_t *r, char *why)
{
    uint64_t all = ~0ULL;
    long ret;
    int rc;

    /* 16 bytes well below the red zone of the stopped thread's stack: dead memory. */
    r->maskarea = (r->saved.rsp - 128 - 64) & ~15ULL;
    if (pe_mem_write(r->memfd, r->maskarea, &all, 8) < 0) {
        let_go(r, 0);
        snprintf(why, PE_WHY_LEN, "cannot write to the stack of thread %d", (int)r->tid);
        return -EIO;
    }
    if ((rc = pe_remote_syscall(r, SYS_rt_sigprocmask, SIG_SETMASK, r->maskarea, r->maskarea + 8, 8,
                                0, 0, &ret, why)) < 0)
        return rc;
    if (ret < 0 || pe_mem_read(r->memfd, r->maskarea + 8, &r->oldmask, 8) < 0) {
        snprintf(why, PE_WHY_LEN, "rt_sigprocmask in thread %d: %s", (int)r->tid,
                 strerror((int)-ret));
        (void)pe_remote_release(r, why + strlen(why));
        return -EIO;
    }
    r->masked = 1;
    return 0;
}

int
pe_remote_call(pe_remote_t *r, uint64_t fn, uint64_t stack_top, uint64_t trap, uint64_t a1,
               uint64_t a2, uint64_t a3, uint64_t a4, uint64_t *ret, char *why)
{
    struct user_regs_struct regs = r->saved;
    int st, rc;

    regs.rip = fn;
    regs.rdi = a1;
    regs.rsi = a2;
    regs.rdx = a3;
    regs.rcx = a4;
    regs.rax = 0;
    regs.rsp = (stack_top & ~15ULL) - 8; /* as after a call: the return address */
    regs.orig_rax = (unsigned long long)-1;
    if (pe_mem_write(r->memfd, regs.rsp, &trap, 8) < 0 ||
        ptrace(PTRACE_SETREGS, r->tid, 0, &regs) < 0 || ptrace(PTRACE_CONT, r->tid, 0, 0) < 0) {
        snprintf(why, PE_WHY_LEN, "cannot start a call in thread %d: %s", (int)r->tid,
                 strerror(errno));
        return -EIO;
    }
    /* No bound: leaving now would let the thread run into our trap untraced
       (a lock it waits for is released by another thread, which runs). */
    if ((rc = wait_stop(r->tid, &st, -1)) < 0) {
        snprintf(why, PE_WHY_LEN, "thread %d of pid %d is gone", (int)r->tid, (int)r->pid);
        return rc;
    }
    if (WSTOPSIG(st) != SIGTRAP || (st >> 16) != 0 ||
        ptrace(PTRACE_GETREGS, r->tid, 0, &regs) < 0 || regs.rip != trap + 1)
        return unexpected(r, st, "pthread_create", why);
    *ret = regs.rax;
    return 0;
}

int
pe_remote_release(pe_remote_t *r, char *why)
{
    struct iovec iov;
    long ret = 0;
    int rc = 0;

    if (r->masked) {
        r->masked = 0;
        if (pe_mem_write(r->memfd, r->maskarea, &r->oldmask, 8) < 0 ||
            pe_remote_syscall(r, SYS_rt_sigprocmask, SIG_SETMASK, r->maskarea, 0, 8, 0, 0, &ret,
                              why) < 0 ||
            ret < 0)
            rc = -EIO;
    }
    if (r->xlen > sizeof(r->xstate)) { /* NT_PRFPREG */
        iov.iov_base = r->xstate;
        iov.iov_len = (size_t)-1 - r->xlen;
        ptrace(PTRACE_SETREGSET, r->tid, (void *)NT_PRFPREG, &iov);
    } else if (r->xlen) {
        iov.iov_base = r->xstate;
        iov.iov_len = r->xlen;
        ptrace(PTRACE_SETREGSET, r->tid, (void *)NT_X86_XSTATE, &iov);
    }
    if (ptrace(PTRACE_SETREGS, r->tid, 0, &r->saved) < 0)
        rc = -EIO;
    if (ptrace(PTRACE_DETACH, r->tid, 0, 0) < 0)
        rc = -EIO;
    clock_gettime(CLOCK_MONOTONIC, &r->t_go);
    if (rc < 0 && why && !why[0])
        snprintf(why, PE_WHY_LEN, "could not put thread %d of pid %d back exactly", (int)r->tid,
                 (int)r->pid);
    return rc;
}
