/*
 * fd.c: the registry of our descriptors (a fixed table claimed with atomics,
 * readable in a signal handler), where they go when created or moved, the
 * real functions behind preload/fd_hooks.c's interposers, the fork child's
 * view, and what fd 2 was at load.  fd.h says the contract.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd.h"
#include "fd_int.h"
#include "log.h"
#include "proc.h"

/* ---- the real functions ---------------------------------------------------------- */

pe_fd_real_t pe_fd_real;

#define RESOLVE(f)                                                                                 \
    __atomic_store_n(&pe_fd_real.f, (__typeof__(pe_fd_real.f))dlsym(RTLD_NEXT, #f),                \
                     __ATOMIC_RELAXED)

void
pe_fd_resolve(void)
{
    static int done;

    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    RESOLVE(close);
    RESOLVE(close_range);
    RESOLVE(dup2);
    RESOLVE(dup3);
    RESOLVE(socket);
    RESOLVE(accept);
    RESOLVE(accept4);
    RESOLVE(pipe);
    RESOLVE(pipe2);
    RESOLVE(poll);
    RESOLVE(read);
    RESOLVE(write);
    RESOLVE(recv);
    RESOLVE(send);
    RESOLVE(shutdown);
    RESOLVE(setsockopt);
    RESOLVE(getsockopt);
    RESOLVE(getsockname);
    RESOLVE(getpeername);
    RESOLVE(fcntl64);
}

PE_SIGSAFE int
pe_fd_sys_close(int fd)
{
    int (*f)(int) = PE_FD_REAL(close);
    return f ? f(fd) : (int)syscall(SYS_close, fd);
}

PE_SIGSAFE int
pe_fd_sys_fcntl(int fd, int cmd, long arg)
{
    int (*f)(int, int, ...) = PE_FD_REAL(fcntl64);
    return f ? f(fd, cmd, arg) : (int)syscall(SYS_fcntl, fd, cmd, arg);
}

/* ---- the registry ------------------------------------------------------------------- */

pe_fd_slot_t pe_fd_slots[PE_FD_SLOTS];
int pe_fd_nslots;
/* Lowest real number ever registered: program calls below it pass at once. */
int pe_fd_lowest = 1 << 30;
/* Set for good once a descriptor of ours was moved or lost: our calls then translate. */
int pe_fd_translating;
/* The process the registry describes (a vfork child shares it and must not edit it). */
pid_t pe_fd_owner;
static int lost_listener_said;

PE_SIGSAFE int
pe_fd_same_file(const pe_fd_slot_t *s, int fd)
{
    struct stat st;
    ino_t ino2;

    if (fstat(fd, &st) < 0)
        return 0;
    if (st.st_dev == s->dev && st.st_ino == s->ino)
        return 1;
    ino2 = __atomic_load_n(&s->ino2, __ATOMIC_ACQUIRE); /* pe_fd_replace under way */
    return ino2 && st.st_dev == s->dev2 && st.st_ino == ino2;
}

/* The slot our code knows as virt (live or dead), or NULL. */
PE_SIGSAFE pe_fd_slot_t *
pe_fd_by_virt(int virt)
{
    int i, st;

    for (i = 0; i < pe_fd_used(); i++) {
        st = __atomic_load_n(&pe_fd_slots[i].state, __ATOMIC_ACQUIRE);
        if ((st == S_LIVE || st == S_DEAD) &&
            __atomic_load_n(&pe_fd_slots[i].virt, __ATOMIC_RELAXED) == virt)
            return &pe_fd_slots[i];
    }
    return NULL;
}

/* The live slot whose descriptor is at real, or NULL. */
PE_SIGSAFE pe_fd_slot_t *
pe_fd_by_real(int fd)
{
    int i;

    if (fd < __atomic_load_n(&pe_fd_lowest, __ATOMIC_RELAXED))
        return NULL;
    for (i = 0; i < pe_fd_used(); i++)
        if (__atomic_load_n(&pe_fd_slots[i].state, __ATOMIC_ACQUIRE) == S_LIVE &&
            __atomic_load_n(&pe_fd_slots[i].real, __ATOMIC_RELAXED) == fd)
            return &pe_fd_slots[i];
    return NULL;
}

PE_SIGSAFE void
pe_fd_mark_dead(pe_fd_slot_t *s)
{
    __atomic_store_n(&pe_fd_translating, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->real, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->state, S_DEAD, __ATOMIC_RELEASE);
}

PE_SIGSAFE void
pe_fd_release(pe_fd_slot_t *s)
{
    __atomic_store_n(&s->state, S_FREE, __ATOMIC_RELEASE);
}

PE_SIGSAFE static void
enroll(int fd, int kind)
{
    struct stat st;
    int i, expected, low, used;

    if (fd < 0 || fstat(fd, &st) < 0)
        return;
    for (i = 0; i < PE_FD_SLOTS; i++) {
        expected = S_FREE;
        if (!__atomic_compare_exchange_n(&pe_fd_slots[i].state, &expected, S_BUSY, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        pe_fd_slots[i].kind = kind;
        pe_fd_slots[i].dev = st.st_dev;
        pe_fd_slots[i].ino = st.st_ino;
        pe_fd_slots[i].ino2 = 0;
        __atomic_store_n(&pe_fd_slots[i].virt, fd, __ATOMIC_RELAXED);
        __atomic_store_n(&pe_fd_slots[i].real, fd, __ATOMIC_RELAXED);
        if (!__atomic_load_n(&pe_fd_owner, __ATOMIC_RELAXED))
            __atomic_store_n(&pe_fd_owner, getpid(), __ATOMIC_RELAXED);
        low = __atomic_load_n(&pe_fd_lowest, __ATOMIC_RELAXED);
        while (fd < low && !__atomic_compare_exchange_n(&pe_fd_lowest, &low, fd, 1,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        __atomic_store_n(&pe_fd_slots[i].state, S_LIVE, __ATOMIC_RELEASE);
        used = __atomic_load_n(&pe_fd_nslots, __ATOMIC_RELAXED);
        while (used < i + 1 && !__atomic_compare_exchange_n(&pe_fd_nslots, &used, i + 1, 1,
                                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
        }
        return;
    }
    /* Table full: the descriptor stays high and close-on-exec, unguarded. */
}

/* The number our code's fd stands for now (-1: lost). */
PE_SIGSAFE int
pe_fd_xlate(int fd)
{
    pe_fd_slot_t *s;

    if (PE_LIKELY(!__atomic_load_n(&pe_fd_translating, __ATOMIC_ACQUIRE)) || !pe_fd_ours_ctx())
        return fd;
    s = pe_fd_by_virt(fd);
    return s ? __atomic_load_n(&s->real, __ATOMIC_RELAXED) : fd;
}

/* Is this process the one the registry describes (not a vfork child)? */
static int
is_owner(void)
{
    return getpid() == __atomic_load_n(&pe_fd_owner, __ATOMIC_RELAXED);
}

/* The live slot at fd, checked to still be ours; a stale one is dropped. */
pe_fd_slot_t *
pe_fd_ours_at(int fd)
{
    pe_fd_slot_t *s = pe_fd_by_real(fd);

    if (!s || !is_owner())
        return NULL;
    if (!pe_fd_same_file(s, fd)) {
        pe_fd_mark_dead(s); /* closed behind our back and the number reused: it is the program's */
        return NULL;
    }
    return s;
}

/*
 * Where our descriptors go: the top of the first 1024 numbers, or of a
 * smaller RLIMIT_NOFILE, taken from the top down (pe_fd_dup_high), so a
 * program that opens files until EMFILE finds every number below ours
 * free.  The floor bounds the search: the top 64 numbers, or the upper half
 * of a limit of 128 or less.
 */
static int
fd_ceiling(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024)
        return (int)rl.rlim_cur;
    return 1024;
}

PE_SIGSAFE int
pe_fd_high_base(void)
{
    int lim = fd_ceiling();

    return lim > 128 ? lim - 64 : lim / 2;
}

/*
 * A close-on-exec copy of fd at the highest free number from `from` up to
 * the ceiling that no slot of ours knows by its old number, or -1.
 * F_DUPFD at k gives k when k is free, else the lowest free number above
 * it: from the top down, the first success below the ceiling is the highest
 * free number.  With a limit above 1024 and 1023 taken, F_DUPFD at 1023
 * answers 1024 or more: given back, and the next number down is tried (our
 * descriptors stay below 1024, where select() can see them and the docs
 * say).  Each failed probe is one number in use at the top: a handful, 64
 * at most.
 */
PE_SIGSAFE int
pe_fd_dup_high(int fd, int from)
{
    int k, n, saved = errno, ceil = fd_ceiling(); /* failed probes are not the caller's */

    for (k = ceil - 1; k >= from; k--) {
        n = pe_fd_sys_fcntl(fd, F_DUPFD_CLOEXEC, k);
        if (n < 0) {
            if (errno != EMFILE && errno != EINVAL)
                return -1;
            continue;
        }
        if (n >= ceil) { /* [k, ceil) all taken */
            pe_fd_sys_close(n);
            continue;
        }
        if (!pe_fd_by_virt(n)) {
            errno = saved;
            return n;
        }
        pe_fd_sys_close(n); /* a number our code still knows: not that one */
    }
    errno = EMFILE;
    return -1;
}

/* Move a descriptor our code just created up out of the program's way and register it. */
PE_SIGSAFE int
pe_fd_adopt(int fd, int kind)
{
    int base = pe_fd_high_base(), n;

    if (fd >= 0 && fd < base && (n = pe_fd_dup_high(fd, base)) >= 0) {
        pe_fd_sys_close(fd);
        fd = n;
    }
    enroll(fd, kind);
    return fd;
}

/* ---- held in bulk: perf events -------------------------------------------------------- */

/*
 * One bit a descriptor number, [0, BULK_MAX): 128 KiB of address space,
 * reserved at the first hold, touched only where bits are set.  A bit is
 * trusted only while /proc says the number is still an anonymous perf event
 * or eventfd (a raw close and a reuse by the program clear it).
 */
#define BULK_MAX (1 << 20) /* the kernel's default nr_open */
static uint64_t *bulk;
static int bulk_lo = BULK_MAX, bulk_hi = -1; /* bounds of the bits ever set */
static int bulk_n;
/*
 * A program's dup2/dup3 onto a held number (pe_fd_bulk_take): the kernel
 * closes ours and the number is the program's.  Nothing translates calls on
 * bulk descriptors, so ours is not moved: the number is forgotten (its bit
 * cleared) and counted, and our code, which checks the bit under bulk_busy
 * for every call that touches the descriptor (pe_fd_bulk_call, _close), never
 * reaches the program's file: the take clears the bit, then waits until no
 * such call is under way, then lets the dup2 go.
 */
static int bulk_busy;       /* our calls on held descriptors under way (pe_fd_bulk_call) */
static uint64_t bulk_taken; /* held numbers the program's dup2/dup3 took */

PE_SIGSAFE static int
bulk_bit(int fd)
{
    uint64_t *b = __atomic_load_n(&bulk, __ATOMIC_ACQUIRE);

    return b && fd >= 0 && fd < BULK_MAX &&
           (__atomic_load_n(&b[fd >> 6], __ATOMIC_RELAXED) >> (fd & 63) & 1);
}

PE_SIGSAFE static void
bulk_set(int fd, int yes)
{
    uint64_t m = 1ull << (fd & 63);

    if (yes)
        __atomic_fetch_or(&bulk[fd >> 6], m, __ATOMIC_RELEASE);
    else if (__atomic_fetch_and(&bulk[fd >> 6], ~m, __ATOMIC_RELEASE) & m)
        __atomic_sub_fetch(&bulk_n, 1, __ATOMIC_RELAXED);
}

/* Is fd (still) an anonymous perf event or eventfd?  readlink: a system call. */
PE_SIGSAFE static int
bulk_kind_ok(int fd)
{
    char link[40];

    if (pe_proc_self_fd_link(fd, link, sizeof(link)) < 0)
        return 0;
    return !strcmp(link, "anon_inode:[perf_event]") || !strcmp(link, "anon_inode:[eventfd]");
}

int
pe_fd_bulk_hold(int fd)
{
    int low;

    if (fd < 0 || fd >= BULK_MAX)
        return -ERANGE;
    if (!__atomic_load_n(&bulk, __ATOMIC_ACQUIRE)) {
        void *m = mmap(NULL, BULK_MAX / 8, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        uint64_t *none = NULL;
        if (m == MAP_FAILED)
            return -ENOMEM;
        if (!__atomic_compare_exchange_n(&bulk, &none, (uint64_t *)m, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            munmap(m, BULK_MAX / 8);
    }
    if (!__atomic_load_n(&pe_fd_owner, __ATOMIC_RELAXED))
        __atomic_store_n(&pe_fd_owner, getpid(), __ATOMIC_RELAXED);
    if (!bulk_bit(fd))
        __atomic_add_fetch(&bulk_n, 1, __ATOMIC_RELAXED);
    bulk_set(fd, 1);
    if (fd < __atomic_load_n(&bulk_lo, __ATOMIC_RELAXED))
        __atomic_store_n(&bulk_lo, fd, __ATOMIC_RELAXED);
    if (fd > __atomic_load_n(&bulk_hi, __ATOMIC_RELAXED))
        __atomic_store_n(&bulk_hi, fd, __ATOMIC_RELAXED);
    low = __atomic_load_n(&pe_fd_lowest, __ATOMIC_RELAXED); /* (the hooks' quick pass) */
    while (fd < low && !__atomic_compare_exchange_n(&pe_fd_lowest, &low, fd, 1, __ATOMIC_RELAXED,
                                                    __ATOMIC_RELAXED)) {
    }
    return 0;
}

/* Our call on a held descriptor is under way (see bulk_busy). */
static void
bulk_enter(void)
{
    __atomic_add_fetch(&bulk_busy, 1, __ATOMIC_SEQ_CST);
}

static void
bulk_leave(void)
{
    __atomic_sub_fetch(&bulk_busy, 1, __ATOMIC_SEQ_CST);
}

int
pe_fd_bulk_close(int fd)
{
    int rc = -EBADF;

    if (!__atomic_load_n(&bulk, __ATOMIC_ACQUIRE))
        return -ENOENT; /* never held: the caller checks for itself */
    bulk_enter();
    /* cleared: taken by a dup2 (or not held); a wrong kind: closed behind our
       back and reused.  Either way the number is the program's now. */
    if (bulk_bit(fd)) {
        bulk_set(fd, 0);
        rc = bulk_kind_ok(fd) ? pe_fd_sys_close(fd) : -EBADF;
    }
    bulk_leave();
    return rc;
}

int
pe_fd_bulk_call(int fd, int (*fn)(int fd, void *arg), void *arg)
{
    int rc = -EBADF;

    bulk_enter();
    if (bulk_bit(fd) && bulk_kind_ok(fd))
        rc = fn(fd, arg);
    bulk_leave();
    return rc;
}

PE_SIGSAFE int
pe_fd_bulk_held(int fd)
{
    return bulk_bit(fd);
}

PE_SIGSAFE void
pe_fd_bulk_take(int fd)
{
    int spins = 0;

    if (!bulk_bit(fd))
        return;
    bulk_set(fd, 0);
    if (bulk_kind_ok(fd))
        __atomic_add_fetch(&bulk_taken, 1, __ATOMIC_RELAXED);
    /* a call of ours that saw the bit is inside: microseconds (close, ioctl,
       an eventfd's read or write); bounded all the same (one preempted for
       long: about a second, then the program's dup2 goes on) */
    while (__atomic_load_n(&bulk_busy, __ATOMIC_SEQ_CST) != 0 && spins++ < 20000) {
        struct timespec ts = {0, 50000};
        if (spins < 100)
            syscall(SYS_sched_yield);
        else
            syscall(SYS_nanosleep, &ts, NULL);
    }
}

uint64_t
pe_fd_bulk_taken(void)
{
    return __atomic_load_n(&bulk_taken, __ATOMIC_RELAXED);
}

void
pe_fd_bulk_atfork_child(void)
{
    __atomic_store_n(&bulk_busy, 0, __ATOMIC_RELAXED); /* the parent's threads are not here */
}

PE_SIGSAFE int
pe_fd_bulk_is(int fd)
{
    if (!bulk_bit(fd) || getpid() != __atomic_load_n(&pe_fd_owner, __ATOMIC_RELAXED))
        return 0;
    if (bulk_kind_ok(fd))
        return 1;
    bulk_set(fd, 0); /* not ours any more */
    return 0;
}

PE_SIGSAFE int
pe_fd_bulk_next(unsigned from, unsigned last)
{
    int hi = __atomic_load_n(&bulk_hi, __ATOMIC_RELAXED);
    unsigned fd = from;

    if (!__atomic_load_n(&bulk_n, __ATOMIC_RELAXED) || hi < 0)
        return -1;
    if (fd < (unsigned)__atomic_load_n(&bulk_lo, __ATOMIC_RELAXED))
        fd = (unsigned)__atomic_load_n(&bulk_lo, __ATOMIC_RELAXED);
    if (last > (unsigned)hi)
        last = (unsigned)hi;
    for (; fd <= last; fd++) {
        if (!(fd & 63) && !__atomic_load_n(&bulk[fd >> 6], __ATOMIC_RELAXED)) {
            fd += 63; /* a word with no bit */
            continue;
        }
        if (pe_fd_bulk_is((int)fd))
            return (int)fd;
    }
    return -1;
}

/* ---- our listening socket lost --------------------------------------------------- */

void
pe_fd_lost(pe_fd_slot_t *s, int virt)
{
    pe_fd_mark_dead(s);
    if (s->kind == K_SOCK && !__atomic_exchange_n(&lost_listener_said, 1, __ATOMIC_RELAXED) &&
        pe_fd_stderr_same())
        pe_log_warn("the server's listening socket (fd %d) was closed behind our back; no more "
                    "requests are served (pid %d)",
                    virt, (int)getpid());
}

/* ---- life cycle --------------------------------------------------------------------- */

void
pe_fd_atfork_child(void)
{
    int i, r;

    /* No server in the child: its copies of our sockets go (a daemon's
       surviving child must not keep the port).  The unwinder's pipe stays.
       The bulk ones (perf events) are their owner's to close (engine_perf.c). */
    __atomic_store_n(&pe_fd_owner, getpid(), __ATOMIC_RELAXED);
    for (i = 0; i < PE_FD_SLOTS; i++) {
        int st = __atomic_load_n(&pe_fd_slots[i].state, __ATOMIC_ACQUIRE);
        if ((st != S_LIVE && st != S_DEAD) || pe_fd_slots[i].kind == K_PIPE)
            continue;
        r = __atomic_load_n(&pe_fd_slots[i].real, __ATOMIC_RELAXED);
        if (st == S_LIVE && r >= 0 && pe_fd_same_file(&pe_fd_slots[i], r))
            pe_fd_sys_close(r);
        pe_fd_release(&pe_fd_slots[i]);
    }
}

int
pe_fd_replace(int fd, int with)
{
    pe_fd_slot_t *s = pe_fd_by_virt(fd);
    int (*dup3f)(int, int, int) = PE_FD_REAL(dup3);
    struct stat st;
    int real, rc;

    if (!s || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != S_LIVE || fstat(with, &st) < 0)
        return -EBADF;
    real = __atomic_load_n(&s->real, __ATOMIC_ACQUIRE);
    /* Both identities are ours while the number changes file: a poll of
       ours in between must not take it for one closed behind our back. */
    s->dev2 = st.st_dev;
    __atomic_store_n(&s->ino2, st.st_ino, __ATOMIC_RELEASE);
    rc = dup3f ? dup3f(with, real, O_CLOEXEC) : (int)syscall(SYS_dup3, with, real, O_CLOEXEC);
    if (rc >= 0) {
        s->dev = st.st_dev;
        __atomic_store_n(&s->ino, st.st_ino, __ATOMIC_RELEASE);
    }
    rc = rc < 0 ? -errno : 0;
    __atomic_store_n(&s->ino2, 0, __ATOMIC_RELEASE);
    return rc;
}

PE_SIGSAFE int
pe_fd_is_ours(int fd)
{
    return pe_fd_by_real(fd) != NULL;
}

static struct {
    int state; /* 0 not noted, 1 open, 2 closed at load */
    dev_t dev;
    ino_t ino;
} err_at_load;

void
pe_fd_note_stderr(void)
{
    struct stat st;

    pe_fd_resolve();
    if (err_at_load.state)
        return;
    if (fstat(STDERR_FILENO, &st) == 0) {
        err_at_load.dev = st.st_dev;
        err_at_load.ino = st.st_ino;
        err_at_load.state = 1;
    } else {
        err_at_load.state = 2;
    }
}

int
pe_fd_stderr_same(void)
{
    struct stat st;

    if (err_at_load.state != 1)
        return err_at_load.state == 0; /* not noted: say it as before */
    return fstat(STDERR_FILENO, &st) == 0 && st.st_dev == err_at_load.dev &&
           st.st_ino == err_at_load.ino;
}
