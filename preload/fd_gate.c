/*
 * fd_gate.c: the gate between our code's new descriptors and the program's
 * closes (fd.h, "Born low").
 *
 * Two counters, each side raising its own and then reading the other's
 * (sequentially consistent, so that at least one of two racing sides sees
 * the other): a creation of ours enters only while no close of the
 * program's is under way, and a close of the program's goes to the kernel
 * only once no creation is.  Closes come first: a creation that finds one
 * steps back and waits, so a stream of our creations cannot hold a close
 * back.  A signal handler nested in the other side on its own thread (our
 * unwinder's pipe made inside the program's close; the program's handler
 * closing inside our unwinder's creation) does not wait: the side it
 * interrupted cannot end first (pe_tls counts each thread's own).  Every
 * other wait is bounded all the same (GATE_WAIT_NS), against a lock order
 * we cannot see (our dlopen waiting for the loader's lock that a program
 * thread holds while it closes); past the bound each side goes on as it
 * did before the gate existed.  The bound is long: a side is usually done
 * in microseconds, but on a loaded machine its thread can be preempted
 * for tens of milliseconds inside, and a close let through is the race
 * again.  A waiter spins briefly,
 * then yields, then sleeps in short steps (on 2 CPUs it must not keep the
 * other side's thread from running).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd.h"
#include "fd_int.h"
#include "guard.h"

#define GATE_WAIT_NS 2000000000LL /* 2 s: see above */
#define GATE_YIELD_NS 200000LL    /* yield for 200 us, then sleep */

/* each on its own line: the program's closes on many threads write one, our
   creations the other */
static int born __attribute__((aligned(64)));    /* our creations under way */
static int closing __attribute__((aligned(64))); /* the program's closes, close_ranges, dup2s */

PE_SIGSAFE static long long
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wait until *count is 0 or the clock passes *deadline (set at the first
   wait that needs it: no clock read when nothing is under way).  1 when it is 0. */
PE_SIGSAFE static int
wait_zero(int *count, long long *deadline)
{
    struct timespec step = {0, 100000}; /* 100 us */
    long long t, t0 = 0;
    int spins = 0;

    while (__atomic_load_n(count, __ATOMIC_SEQ_CST) != 0) {
        if (++spins < 64)
            continue;
        t = now_ns();
        if (!t0)
            t0 = t;
        if (!*deadline)
            *deadline = t + GATE_WAIT_NS;
        else if (t > *deadline)
            return 0;
        if (t - t0 < GATE_YIELD_NS)
            syscall(SYS_sched_yield); /* the other side may be preempted: let it run */
        else
            syscall(SYS_nanosleep, &step, NULL);
    }
    return 1;
}

PE_SIGSAFE void
pe_fd_born_begin(void)
{
    long long deadline = 0;

    pe_tls.fd_born++;
    if (pe_tls.fd_closing) { /* a handler within this thread's own close: it cannot end first */
        __atomic_add_fetch(&born, 1, __ATOMIC_SEQ_CST);
        return;
    }
    for (;;) {
        __atomic_add_fetch(&born, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&closing, __ATOMIC_SEQ_CST) == 0)
            return;
        __atomic_sub_fetch(&born, 1, __ATOMIC_SEQ_CST); /* a close first */
        if (!wait_zero(&closing, &deadline)) {
            __atomic_add_fetch(&born, 1, __ATOMIC_SEQ_CST);
            return;
        }
    }
}

PE_SIGSAFE void
pe_fd_born_end(void)
{
    __atomic_sub_fetch(&born, 1, __ATOMIC_SEQ_CST);
    pe_tls.fd_born--;
}

int
pe_fd_main_stack_begin(void)
{
    if (pe_gettid() != getpid())
        return 0;
    pe_fd_born_begin();
    return 1;
}

void
pe_fd_main_stack_end(int entered)
{
    if (entered)
        pe_fd_born_end();
}

PE_SIGSAFE void
pe_fd_close_begin(void)
{
    long long deadline = 0;

    pe_tls.fd_closing++;
    __atomic_add_fetch(&closing, 1, __ATOMIC_SEQ_CST);
    if (!pe_tls.fd_born) /* (a handler within this thread's creation: as before the gate) */
        (void)wait_zero(&born, &deadline);
}

PE_SIGSAFE void
pe_fd_close_end(void)
{
    __atomic_sub_fetch(&closing, 1, __ATOMIC_SEQ_CST);
    pe_tls.fd_closing--;
}

void
pe_fd_gate_atfork_child(void)
{
    /* only the forking thread is here: nothing of the others is under way */
    __atomic_store_n(&born, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&closing, 0, __ATOMIC_RELAXED);
}

PE_SIGSAFE int
pe_fd_move_high(int fd)
{
    int base = pe_fd_high_base(), n, saved = errno;

    if (fd >= 0 && fd < base && (n = pe_fd_dup_high(fd, base)) >= 0) {
        pe_fd_sys_close(fd);
        fd = n;
    }
    errno = saved;
    return fd;
}

PE_SIGSAFE int
pe_fd_open_high(const char *path, int flags)
{
    int fd, saved;

    pe_fd_born_begin();
    fd = pe_fd_move_high((int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC));
    saved = errno;
    pe_fd_born_end();
    errno = saved;
    return fd;
}
