/*
 * engine_perf.c: CPU samples from perf events, no signal (contract and
 * bounds in engine_perf.h).  Owns the per-CPU rings, the events, the set of
 * threads covered, and the reading of the rings; the unwinding is
 * stack/unwind.c's (pe_unwind_copy), the windows are sampler.c's and the
 * collector collector.c's.
 *
 * Layout of one CPU's ring (perf_event_open(2)): a metadata page
 * (data_head written by the kernel, data_tail by us), then 2^k data pages
 * of records.  The ring belongs to a dummy event on the main thread for that
 * CPU; every sampling event of that CPU sends its records there
 * (PERF_EVENT_IOC_SET_OUTPUT), and so do the events threads inherit.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/aslimit.h"
#include "../preload/fd.h"
#include "../preload/guard.h"
#include "../preload/proc.h"
#include "../preload/threads.h"
#include "../stack/cfi.h"
#include "../stack/unwind.h"
#include "engine_perf.h"

#define STACK_COPY 8192        /* bytes of user stack each sample carries */
#define RING_PAGES 128         /* data pages a CPU (512 KiB: ~63 samples) */
#define RINGS_BYTES (8u << 20) /* all the rings together at most (many CPUs: smaller rings) */
#define RING_PAGES_LEAST 4     /* one sample and a half */
#define CPUS_MAX 1024
#define TID_LIMIT (1u << 22) /* the kernel's PID_MAX_LIMIT on 64-bit */
#define FD_SHARE 4           /* our events take at most 1/FD_SHARE of RLIMIT_NOFILE */
#define FD_FLOOR 1024        /* where our event descriptors go, when the limit allows */
#define EVENTS_MAX 65536     /* threads x CPUs at the start: kernel memory (~1 KiB an event) */

/* x86-64's perf register numbers (asm/perf_regs.h) */
#define REG_BP 6
#define REG_SP 7
#define REG_IP 8

/* ---- data ------------------------------------------------------------------------ */

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static int on;      /* under plock; read unlocked by pe_perf_on */
static int publish; /* started for a CPU session: samples go to the sampler's ring (else wall's
                       last stacks only) */
static struct perf_event_attr sattr; /* the sampling events' attributes */
static int ncpu;                     /* CPUs with a ring */
static struct {
    int cpu;
    int fd; /* the dummy event owning the ring */
    struct perf_event_mmap_page *meta;
    uint8_t *data;
    size_t size; /* data bytes, a power of two */
} rings[CPUS_MAX];
static size_t ring_pages; /* data pages a ring */
static int *evfds;        /* the sampling events' descriptors */
static int nev, evcap;
static int fd_budget;    /* descriptors we may hold */
static int kick_fd = -1; /* eventfd: wakes the collector from its poll */
static uint8_t *covered; /* bitmap by tid: a thread some event samples */
static uint64_t st_samples, st_lost, st_deep, st_unseen;
static uint64_t lost_at_scan; /* st_lost at the last scan (collector) */
static int st_fds_peak, st_rings_peak;
static uint8_t rec[65536 + 64];        /* one record, copied out of the ring (collector) */
static uintptr_t upcs[PE_RING_FRAMES]; /* a stack no ring slot takes (collector, plock) */
static int cpu_ids[CPUS_MAX];          /* the online CPUs (pe_perf_start) */
static pid_t self;                     /* our pid at the start (getpid is a system call a sample) */

/* Each thread's last stack (direct-mapped by tid), kept while a wall-clock
   session wants them for its running threads (pe_perf_recent), under plock.
   Sized to the threads (recent_size: at the start, grown as the collector's
   scans count more): twice as many slots, a power of two, 256 to 4,096
   (1 KiB a slot: 4 MiB of address space at most, touched only where threads
   write, and within ulimit -v's 1/64); threads beyond, or two ids on one
   slot, take each other's: pe_perf_recent says so (the wall profile's
   comment counts them). */
#define RECENT_LEAST 256
#define RECENT_MOST 4096
typedef struct recent_s {
    pid_t tid;
    int n;
    uint64_t t; /* CLOCK_MONOTONIC ns of the sample */
    uintptr_t pcs[PE_MAX_FRAMES];
} recent_t;
static recent_t *recent;
static uint32_t recent_slots; /* a power of two (under plock) */
static int threads_at_start;  /* application threads listed by the start */
/*
 * Threads that looked uncovered at a scan after lost records (their fork
 * record may have been lost with them, their events inherited: opening more
 * would sample them twice), with their CPU time then (plock).  One that has since
 * run SUSPECT_RUN_NS and still has no sample of its own has no events: it is
 * opened at the next scan, lost records or not (under sustained loss it
 * was never opened: e2e_cpu_perf's late thread, 0 samples in CI at load).
 */
#define SUSPECTS 64
#define SUSPECT_RUN_NS 200000000LL /* 200 ms of CPU: 200 samples at 1000 Hz, 20 at 100 */
static struct {
    pid_t tid;
    uint64_t run_ns;
} suspects[SUSPECTS];

static const char *const ev_names[PE_PERF_EV_N] = {"cpu", "cycles", "instructions", "cache-misses",
                                                   "branch-misses"};

/* ---- helpers -------------------------------------------------------------------- */

/* Slots for `threads`: twice as many, a power of two, within the bounds. */
static uint32_t
recent_size(int threads)
{
    uint32_t want = RECENT_LEAST;

    while (want < RECENT_MOST && want < 2u * (uint32_t)threads)
        want *= 2;
    want = pe_aslimit_fit(want, sizeof(recent_t), 64, RECENT_LEAST);
    while (want & (want - 1)) /* (a limit's share: down to a power of two) */
        want &= want - 1;
    return want;
}

/* The last-stack table for the threads the start listed (plock held).  0 or -ENOMEM. */
static int
recent_alloc(void)
{
    uint32_t want = recent_size(threads_at_start);

    if (!(recent = calloc(want, sizeof(*recent))))
        return -ENOMEM;
    recent_slots = want;
    return 0;
}

/* More threads than the table was sized for (a scan counted them; plock
   held): a bigger one, the stacks kept where they still fit.  Kept as it is
   without memory. */
static void
recent_grow(int threads)
{
    uint32_t want = recent_size(threads);
    recent_t *t;

    if (!recent || want <= recent_slots || !(t = calloc(want, sizeof(*t))))
        return;
    for (uint32_t i = 0; i < recent_slots; i++)
        if (recent[i].tid)
            t[(uint32_t)recent[i].tid & (want - 1)] = recent[i];
    free(recent);
    recent = t;
    recent_slots = want;
}

/* Out of the program's way: at or above FD_FLOOR when the limit leaves room,
   close-on-exec either way (PERF_FLAG_FD_CLOEXEC), and held in preload/fd.h's
   registry (a program's close, close_range, closefrom leave it open). */
static int
lift(int fd)
{
    struct rlimit rl;
    int n;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > FD_FLOOR * 2 &&
        (n = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR)) >= 0) {
        syscall(SYS_close, fd); /* within the gate: never the program's close (it waits for us) */
        fd = n;
    }
    (void)pe_fd_bulk_hold(fd); /* (-ENOMEM: unguarded, still_ours below) */
    return fd;
}

/*
 * Is fd still the kind of descriptor we made there ("perf_event", "eventfd")?
 * Held in preload/fd.h's registry, in bulk: a program's close, close_range
 * and closefrom leave them; its dup2 onto one, or a raw close system call,
 * still takes the number; we never close or write to a number that is not
 * ours any more.  Not proof (the program's own perf event or eventfd at that
 * number would pass), which is rare enough.
 */
static int
still_ours(int fd, const char *what)
{
    char link[64], want[48];

    snprintf(want, sizeof(want), "anon_inode:[%s]", what);
    if (pe_proc_self_fd_link(fd, link, sizeof(link)) < 0)
        return 0; /* gone, or no /proc: leave it (a leak, never the program's file) */
    return !strcmp(link, want);
}

static void
close_ours(int fd, const char *what)
{
    /* held: closed past the close hook (in a fork child too), unless the
       program's dup2 took the number; never held (no bulk table): checked */
    if (fd >= 0 && pe_fd_bulk_close(fd) == -ENOENT && still_ours(fd, what))
        close(fd);
}

/* perf_event_open, the new descriptor lifted and held within preload/fd.h's
   gate: a program closing every descriptor meanwhile neither closes ours nor
   gets its number back for a file that we would then touch.  Closed with
   close_ours.  The descriptor, or -1 and errno. */
static int
perf_open(struct perf_event_attr *a, pid_t tid, int cpu, int group)
{
    int fd, saved;

    pe_fd_born_begin();
    fd = (int)syscall(SYS_perf_event_open, a, tid, cpu, group, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0)
        fd = lift(fd);
    saved = errno;
    pe_fd_born_end();
    errno = saved;
    return fd;
}

/* Would the kernel open this event?  Opened and closed at once, within the
   gate (as perf_open), never held.  0 or -errno. */
static int
perf_try(struct perf_event_attr *a, pid_t tid, int cpu)
{
    int fd, rc;

    pe_fd_born_begin();
    fd = (int)syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    rc = fd < 0 ? -errno : 0;
    if (fd >= 0)
        syscall(SYS_close, fd); /* (as lift) */
    pe_fd_born_end();
    return rc;
}

/* The calls on our descriptors that run under pe_fd_bulk_call: a program's
   dup2 onto the number waits for them, and they never run once it took it. */
static int
set_output(int ring_fd, void *event_fd)
{
    return ioctl(*(int *)event_fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0 ? -errno : 0;
}

static int
kick_rw(int fd, void *wr)
{
    uint64_t v = 1;

    /* write: full, the collector is awake; read: empty, the wake-up was a ring's */
    return (int)(*(int *)wr ? write(fd, &v, sizeof(v)) : read(fd, &v, sizeof(v)));
}

static int
tid_covered(pid_t tid)
{
    return tid > 0 && (unsigned)tid < TID_LIMIT && (covered[tid >> 3] >> (tid & 7)) & 1;
}

static void
tid_mark(pid_t tid, int yes)
{
    if (tid <= 0 || (unsigned)tid >= TID_LIMIT)
        return;
    if (yes)
        covered[tid >> 3] |= (uint8_t)(1u << (tid & 7));
    else
        covered[tid >> 3] &= (uint8_t) ~(1u << (tid & 7));
}

static void
close_all(void)
{
    for (int i = 0; i < nev; i++)
        close_ours(evfds[i], "perf_event");
    nev = 0;
    for (int c = 0; c < ncpu; c++) {
        if (rings[c].meta)
            munmap(rings[c].meta, (ring_pages + 1) * (size_t)getpagesize());
        close_ours(rings[c].fd, "perf_event");
        rings[c].meta = NULL;
    }
    ncpu = 0;
    close_ours(kick_fd, "eventfd");
    kick_fd = -1;
    free(recent);
    recent = NULL;
    if (covered)
        munmap(covered, TID_LIMIT / 8);
    covered = NULL;
}

/*
 * The CPUs a thread may run on: /sys/devices/system/cpu/online ("0-3,8"),
 * or 0..CONF-1 without it.  Into cpu[], at most max; how many.
 */
static int
online_cpus(int *cpu, int max)
{
    char buf[4096], *p = buf;
    int n = 0, fd = pe_fd_open_high("/sys/devices/system/cpu/online", O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (got > 0) {
        buf[got] = 0;
        while (*p >= '0' && *p <= '9' && n < max) {
            long lo = strtol(p, &p, 10), hi = lo;
            if (*p == '-')
                hi = strtol(p + 1, &p, 10);
            for (long c = lo; c <= hi && n < max; c++)
                cpu[n++] = (int)c;
            if (*p == ',')
                p++;
        }
    }
    if (n == 0) {
        long conf = sysconf(_SC_NPROCESSORS_CONF);
        for (long c = 0; c < (conf > 0 ? conf : 1) && n < max; c++)
            cpu[n++] = (int)c;
    }
    return n;
}

/* A ring on cpu, owned by a dummy event on the main thread.  0 or -errno. */
static int
ring_open(int cpu, size_t pages)
{
    struct perf_event_attr a;
    size_t psz = (size_t)getpagesize();
    void *m;
    int fd;

    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.remove_on_exec = 1;
    a.use_clockid = 1; /* as the sampling events: one clock a ring (SET_OUTPUT) */
    a.clockid = CLOCK_MONOTONIC;
    a.watermark = 1;
    a.wakeup_watermark = (uint32_t)(pages * psz / 2); /* poll: a ring half full */
    fd = perf_open(&a, getpid(), cpu, -1);
    if (fd < 0 && errno == ESRCH) /* the main thread has exited: the calling thread (ours) */
        fd = perf_open(&a, (pid_t)syscall(SYS_gettid), cpu, -1);
    if (fd < 0)
        return -errno;
    m = mmap(NULL, (pages + 1) * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        int err = -errno;
        close_ours(fd, "perf_event");
        return err;
    }
    rings[ncpu].cpu = cpu;
    rings[ncpu].fd = fd;
    rings[ncpu].meta = m;
    rings[ncpu].data = (uint8_t *)m + psz;
    rings[ncpu].size = pages * psz;
    ncpu++;
    return 0;
}

/* Events on tid, one per CPU, each into its CPU's ring (plock held).
   0, -ESRCH (gone), -EMFILE (our share is used up) or another -errno. */
static int
thread_open(pid_t tid)
{
    int opened = 0, rc;

    if (nev + ncpu > fd_budget)
        return -EMFILE;
    if (nev + ncpu > evcap) {
        int cap = evcap ? evcap * 2 : 256;
        int *v = realloc(evfds, (size_t)cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        evfds = v;
        evcap = cap;
    }
    for (int c = 0; c < ncpu; c++) {
        int fd = perf_open(&sattr, tid, rings[c].cpu, -1);
        if (fd < 0) {
            int err = -errno;
            if (!opened)
                return err;
            continue; /* (the thread left meanwhile: its other events sample nothing) */
        }
        /* (the ring's descriptor taken by the program's dup2: -EBADF) */
        if ((rc = pe_fd_bulk_call(rings[c].fd, set_output, &fd)) < 0) {
            close_ours(fd, "perf_event");
            if (!opened)
                return rc;
            continue;
        }
        evfds[nev++] = fd;
        opened++;
        if (nev + ncpu + 1 > st_fds_peak)
            st_fds_peak = nev + ncpu + 1; /* (with the kick descriptor) */
    }
    tid_mark(tid, 1);
    return 0;
}

/* The attributes of the sampling events for event ev every `period`. */
static void
attr_for(struct perf_event_attr *a, int ev, int64_t period, int user_only)
{
    static const uint64_t hw[PE_PERF_EV_N] = {
        0, PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CACHE_MISSES,
        PERF_COUNT_HW_BRANCH_MISSES};

    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    if (ev == PE_PERF_EV_CLOCK) {
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_TASK_CLOCK; /* ns of the thread's CPU time */
        a->sample_period = (uint64_t)period;
    } else {
        /* counters: one sample per delay x 1e9 cycles or instructions (1 GHz),
           per delay x 1e6 misses */
        a->type = PERF_TYPE_HARDWARE;
        a->config = hw[ev];
        a->sample_period =
            ev <= PE_PERF_EV_INSTRUCTIONS ? (uint64_t)period : (uint64_t)(period / 1000 + 1);
    }
    a->sample_type =
        PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a->sample_regs_user = (1ull << REG_BP) | (1ull << REG_SP) | (1ull << REG_IP);
    a->sample_stack_user = STACK_COPY;
    a->exclude_kernel = user_only; /* time in system calls too, where we may */
    a->exclude_hv = 1;
    a->inherit = 1;        /* threads created later sample into the same rings */
    a->inherit_thread = 1; /* threads only: a fork child is not ours to sample */
    a->remove_on_exec = 1;
    a->task = 1; /* PERF_RECORD_FORK/EXIT: which threads inherited */
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC; /* sample times comparable with ours (pe_perf_recent) */
}

/* ---- module API ------------------------------------------------------------------ */

const char *
pe_perf_event_name(int ev)
{
    return ev >= 0 && ev < PE_PERF_EV_N ? ev_names[ev] : "?";
}

int
pe_perf_event_by_name(const char *s)
{
    for (int i = 0; i < PE_PERF_EV_N; i++)
        if (!strcmp(s, ev_names[i]))
            return i;
    return -1;
}

int
pe_perf_on(void)
{
    return __atomic_load_n(&on, __ATOMIC_ACQUIRE);
}

/* Why an errno from perf_event_open keeps the engine off. */
static const char *
why_errno(int err, int ev)
{
    switch (err) {
    case -ENOENT:
    case -EOPNOTSUPP:
        return ev == PE_PERF_EV_CLOCK ? "perf events: the kernel has no task-clock event"
                                      : "this machine has no hardware performance counters "
                                        "(perf_event_open answers ENOENT: no PMU, as in most VMs)";
    case -ENOSYS: return "perf events: the kernel has no perf_event_open (ENOSYS)";
    /* which errno it was tells the operator where to look */
    case -EACCES:
        return "perf events refused (perf_event_open: EACCES, permission denied: "
               "kernel.perf_event_paranoid is 3 or more, or a security module forbids it)";
    case -EPERM:
        return "perf events refused (perf_event_open: EPERM, operation not permitted: "
               "a seccomp filter or container forbids it, or kernel.perf_event_paranoid)";
    case -EMFILE:
    case -ENFILE: return "perf events: no descriptor left (EMFILE)";
    default: return "perf events: perf_event_open failed";
    }
}

/* The application threads now, into *tids (malloc'd); how many (0: none, or no /proc). */
static int
list_threads(pid_t **tids)
{
    pe_proc_tasks_t it;
    pid_t tid, *v = NULL;
    int n = 0, cap = 0;

    *tids = NULL;
    if (pe_proc_tasks_open(&it) < 0)
        return 0;
    while ((tid = pe_proc_tasks_next(&it)) > 0) {
        if (pe_threads_is_internal(tid))
            continue;
        if (n == cap) {
            pid_t *w = realloc(v, (size_t)(cap = cap ? 2 * cap : 256) * sizeof(*w));
            if (!w)
                break;
            v = w;
        }
        v[n++] = tid;
    }
    pe_proc_tasks_close(&it);
    *tids = v;
    return n;
}

/* Whether n threads on cpus CPUs fit the bounds (engine_perf.h): 0, or -errno and *why. */
static int
within_bounds(int n, int cpus, const char **why)
{
    if (n == 0) {
        *why = "perf events: /proc/self/task lists no thread";
        return -ESRCH;
    }
    if ((int64_t)n * cpus > EVENTS_MAX) {
        *why = "perf events: threads x CPUs is above 65,536 events (kernel memory)";
        return -E2BIG;
    }
    if ((int64_t)n * cpus + cpus > fd_budget) {
        *why = "perf events would need more descriptors (threads x CPUs) than a quarter of "
               "RLIMIT_NOFILE";
        return -EMFILE;
    }
    return 0;
}

/* One sampling event on tid first, closed at once: its errno says whether perf
   events are allowed here at all, before any ring is made; sattr is then what
   the kernel takes (user space only under paranoid 2).  0, or -errno and *why. */
static int
probe_sampling(int64_t period_ns, int ev, pid_t tid, const char **why)
{
    int rc;

    attr_for(&sattr, ev, period_ns, 0);
    rc = perf_try(&sattr, tid, -1);
    if (rc == -EACCES || rc == -EPERM) {
        attr_for(&sattr, ev, period_ns, 1); /* paranoid 2: user space only */
        rc = perf_try(&sattr, tid, -1);
    }
    if (rc < 0)
        *why = why_errno(rc, ev);
    return rc;
}

/* A ring on every online CPU, all alike (an offline CPU skipped), and the kick
   eventfd.  0, or -errno and *why. */
static int
open_rings(int cpus, int ev, const char **why)
{
    size_t pages = pe_aslimit_fit(RING_PAGES, (size_t)getpagesize(), 256, RING_PAGES_LEAST);
    int rc = 0;

    while (pages > RING_PAGES_LEAST && pages * (size_t)getpagesize() * (size_t)cpus > RINGS_BYTES)
        pages /= 2;
    for (int c = 0; c < cpus; c++) {
        /* under RLIMIT_MEMLOCK / perf_event_mlock_kb: smaller rings (all alike) */
        while ((rc = ring_open(cpu_ids[c], pages)) == -EPERM && ncpu == 0 &&
               pages > RING_PAGES_LEAST)
            pages /= 2;
        ring_pages = pages;
        if (rc < 0 && rc != -ENODEV && rc != -EINVAL) /* (an offline CPU: skipped) */
            break;
        rc = 0;
    }
    if (rc < 0 || ncpu == 0) {
        rc = rc < 0 ? rc : -ENODEV;
        *why = rc == -EPERM ? "perf events: their ring buffers exceed the locked-memory limit "
                              "(RLIMIT_MEMLOCK, kernel.perf_event_mlock_kb)"
                            : why_errno(rc, ev);
        return rc;
    }
    pe_fd_born_begin(); /* as perf_open */
    if ((kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0)
        kick_fd = lift(kick_fd);
    rc = kick_fd < 0 ? -errno : 0;
    pe_fd_born_end();
    if (rc < 0) {
        *why = why_errno(rc, ev);
        return rc;
    }
    return 0;
}

/* The start's state: counters zeroed, CPUs listed, the descriptor budget, the
   thread bitmap.  The CPUs, or -ENOMEM and *why. */
static int
start_reset(const char **why)
{
    struct rlimit rl;

    st_samples = st_lost = st_deep = st_unseen = lost_at_scan = 0;
    memset(suspects, 0, sizeof(suspects));
    st_fds_peak = st_rings_peak = 0;
    self = getpid();
    fd_budget = 1 << 20;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_budget = (int)(rl.rlim_cur / FD_SHARE);
    covered = mmap(NULL, TID_LIMIT / 8, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (covered == MAP_FAILED) {
        covered = NULL;
        *why = "perf events: no memory for the thread table";
        return -ENOMEM;
    }
    return online_cpus(cpu_ids, CPUS_MAX);
}

/*
 * Start (plock taken here): the threads now, the bounds, one probe event,
 * the rings, then an event per thread and CPU.  `pub`: a CPU session's (its
 * samples go to the sampler's ring); else a wall session's (last stacks
 * only).  On any failure nothing is left open.
 */
static int
start(int64_t period_ns, int ev, int pub, const char **why)
{
    pid_t *tids = NULL;
    int n = 0, rc, cpus;

    *why = NULL;
    if (ev < 0 || ev >= PE_PERF_EV_N)
        return -EINVAL;
    (void)pe_cfi_init(); /* the unwinding's rule table (stack/cfi.h) */
    pthread_mutex_lock(&plock);
    if (on) {
        pthread_mutex_unlock(&plock);
        return -EBUSY;
    }
    if ((rc = cpus = start_reset(why)) < 0)
        goto err;
    n = list_threads(&tids); /* the threads now: every one needs an event per CPU */
    if ((rc = within_bounds(n, cpus, why)) < 0 ||
        (rc = probe_sampling(period_ns, ev, tids[0], why)) < 0 ||
        (rc = open_rings(cpus, ev, why)) < 0)
        goto err;
    for (int i = 0; i < n; i++) {
        rc = thread_open(tids[i]);
        if (rc == -ESRCH)
            continue;
        if (rc < 0) {
            *why = why_errno(rc, ev);
            goto err;
        }
    }
    free(tids);
    tids = NULL;
    st_rings_peak = ncpu;
    publish = pub;
    threads_at_start = n;
    if (!pub && recent_alloc() < 0) {
        rc = -ENOMEM;
        *why = "perf events: no memory for the threads' last stacks";
        goto err;
    }
    __atomic_store_n(&on, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&plock);
    return 0;

err:
    free(tids);
    close_all();
    pthread_mutex_unlock(&plock);
    return rc < 0 ? rc : -EIO;
}

int
pe_perf_probe(const char **why)
{
    struct perf_event_attr a;
    int rc;

    attr_for(&a, PE_PERF_EV_CLOCK, 10000000, 1); /* user space only: paranoid 2 allows it */
    a.sample_type = 0; /* a count of the calling thread, never read: nothing to write */
    a.sample_period = 0;
    a.inherit = 0;
    a.inherit_thread = 0; /* (needs inherit) */
    a.task = 0;
    if ((rc = perf_try(&a, 0, -1)) < 0) {
        *why = why_errno(rc, PE_PERF_EV_CLOCK);
        return -1;
    }
    return 0;
}

int
pe_perf_start(int64_t period_ns, int ev, const char **why)
{
    return start(period_ns, ev, 1, why);
}

int
pe_perf_start_wall(int64_t period_ns, const char **why)
{
    return start(period_ns, PE_PERF_EV_CLOCK, 0, why);
}

int
pe_perf_for_cpu(void)
{
    return pe_perf_on() && __atomic_load_n(&publish, __ATOMIC_RELAXED);
}

void
pe_perf_stop(void)
{
    pthread_mutex_lock(&plock);
    if (on) {
        __atomic_store_n(&on, 0, __ATOMIC_RELEASE);
        close_all();
    }
    pthread_mutex_unlock(&plock);
}

/* Has tid, uncovered, run long enough since it was first suspected (plock held)? */
static int
suspect_ran(pid_t tid)
{
    uint64_t run, slices;
    int i, free_at = -1;

    if (pe_proc_task_schedstat(tid, &run, &slices) < 0)
        return 0;
    for (i = 0; i < SUSPECTS; i++) {
        if (suspects[i].tid == tid)
            break;
        if (!suspects[i].tid && free_at < 0)
            free_at = i;
    }
    if (i == SUSPECTS) { /* first seen: noted (a full table notes none: opened later) */
        if (free_at >= 0) {
            suspects[free_at].tid = tid;
            suspects[free_at].run_ns = run;
        }
        return 0;
    }
    if (run - suspects[i].run_ns < (uint64_t)SUSPECT_RUN_NS)
        return 0;
    suspects[i].tid = 0;
    return 1;
}

int
pe_perf_scan(void (*drain)(void))
{
    pe_proc_tasks_t it;
    pid_t tid, *tids = NULL;
    int n = 0, cap = 0, total, listed, lossy = 0;

    if (!pe_perf_on())
        return -1;
    /* list first, then read the rings: a thread listed and inherited has
       its PERF_RECORD_FORK in a ring by then (the kernel writes it in
       clone, before clone returns) */
    if (pe_proc_tasks_open(&it) < 0)
        return -1;
    while ((tid = pe_proc_tasks_next(&it)) > 0) {
        if (n == cap) {
            pid_t *v = realloc(tids, (size_t)(cap = cap ? 2 * cap : 256) * sizeof(*v));
            if (!v)
                break;
            tids = v;
        }
        tids[n++] = tid;
    }
    pe_proc_tasks_close(&it);
    total = listed = n;
    drain();
    pthread_mutex_lock(&plock);
    if (st_lost != lost_at_scan) {
        /* records were lost, fork records maybe among them: a thread that
           looks uncovered may have inherited its events; opening more would
           sample it twice.  Its samples mark it in the meantime; the next
           scan (in a second: -1 leaves the count check unsatisfied) opens
           what is still uncovered, and a suspect that ran meanwhile. */
        lost_at_scan = st_lost;
        lossy = 1;
        total = -1;
    } else {
        memset(suspects, 0, sizeof(suspects)); /* whatever is uncovered is opened now */
    }
    if (on)
        recent_grow(listed); /* (threads made since the start) */
    for (int i = 0; on && i < n; i++) {
        if (tid_covered(tids[i]) || pe_threads_is_internal(tids[i]))
            continue;
        if (lossy && !suspect_ran(tids[i]))
            continue;
        if (thread_open(tids[i]) == -EMFILE) {
            st_unseen++;
            tid_mark(tids[i], 1); /* counted once */
        }
    }
    pthread_mutex_unlock(&plock);
    free(tids);
    return total;
}

int
pe_perf_pollfds(struct pollfd *fds, int max)
{
    int n = 0;

    pthread_mutex_lock(&plock);
    for (int c = 0; on && c < ncpu && n < max; c++) {
        if (!pe_fd_bulk_held(rings[c].fd))
            continue; /* the program's now (its dup2): its data is none of ours to wait on */
        fds[n].fd = rings[c].fd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        n++;
    }
    if (on && n < max && kick_fd >= 0 && pe_fd_bulk_held(kick_fd)) {
        fds[n].fd = kick_fd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        n++;
    }
    pthread_mutex_unlock(&plock);
    return n;
}

void
pe_perf_kick(void)
{
    int wr = 1;

    /* under the lock: a descriptor closed meanwhile may be the program's by now */
    pthread_mutex_lock(&plock);
    if (kick_fd >= 0)
        (void)pe_fd_bulk_call(kick_fd, kick_rw, &wr);
    pthread_mutex_unlock(&plock);
}

void
pe_perf_kicked(void)
{
    int wr = 0;

    pthread_mutex_lock(&plock);
    if (kick_fd >= 0)
        (void)pe_fd_bulk_call(kick_fd, kick_rw, &wr);
    pthread_mutex_unlock(&plock);
}

/* One PERF_RECORD_SAMPLE: unwind its copy into out. */
static void
sample(pe_ring_t *out, const uint8_t *p, const uint8_t *end)
{
    uint32_t pid, tid;
    uint64_t t, abi, regs[3] = {0, 0, 0}, size = 0, dyn = 0;
    const uint8_t *stack = NULL;
    pe_ring_slot_t *s;
    uintptr_t *pcs;
    int n, how = 0;

#define TAKE(dst, len)                                                                             \
    do {                                                                                           \
        if ((size_t)(end - p) < (len))                                                             \
            return;                                                                                \
        memcpy((dst), p, (len));                                                                   \
        p += (len);                                                                                \
    } while (0)
    TAKE(&pid, 4);
    TAKE(&tid, 4);
    TAKE(&t, 8);
    TAKE(&abi, 8);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE)
        TAKE(regs, sizeof(regs)); /* in bit order: bp, sp, ip */
    TAKE(&size, 8);
    if (size) {
        if ((uint64_t)(end - p) < size + 8)
            return;
        stack = p;
        p += size;
        TAKE(&dyn, 8);
    }
#undef TAKE
    if ((pid_t)pid != self || abi == PERF_SAMPLE_REGS_ABI_NONE ||
        pe_threads_is_internal((pid_t)tid))
        return;
    st_samples++;
    tid_mark((pid_t)tid, 1); /* sampled, so covered (its fork record may have been lost) */
    s = NULL;
    if (publish && !(s = pe_ring_claim(out)))
        pe_ring_drop(out, 1);
    if (!s && !recent)
        return;
    pcs = s ? s->pcs : upcs; /* (wall only: the last stack, no CPU sample) */
    if (dyn > size)
        dyn = size;
    n = pe_unwind_copy(regs[2], regs[1], regs[0], stack, (size_t)dyn, pcs, PE_RING_FRAMES, &how);
    if (how == PE_UNWIND_COPY_DEEPER)
        st_deep++;
    if (recent) {
        recent_t *r = &recent[tid & (recent_slots - 1)];
        r->tid = (pid_t)tid;
        r->t = t;
        r->n = n < PE_MAX_FRAMES ? n : PE_MAX_FRAMES;
        memcpy(r->pcs, pcs, (size_t)r->n * sizeof(r->pcs[0]));
    }
    if (!s)
        return;
    s->tid = (pid_t)tid;
    s->weight = 1;
    s->nframes = n;
    s->flags = how == PE_UNWIND_COPY_CUT ? PE_RING_F_CUT : 0; /* (the "cut:" comment) */
    pe_ring_publish(out, s);
}

int
pe_perf_drain(pe_ring_t *out)
{
    uint64_t before;

    pthread_mutex_lock(&plock);
    before = st_samples;
    for (int c = 0; on && c < ncpu; c++) {
        struct perf_event_mmap_page *m = rings[c].meta;
        uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = m->data_tail;
        size_t mask = rings[c].size - 1;

        while (tail < head) {
            struct perf_event_header h;
            size_t at = (size_t)(tail & mask), first;
            const uint8_t *r;

            memcpy(&h, rings[c].data + at, sizeof(h)); /* headers are 8-aligned: never split */
            if (h.size < sizeof(h) || h.size > head - tail)
                break; /* (a torn record: cannot happen; give up the rest) */
            first = rings[c].size - at < h.size ? rings[c].size - at : h.size;
            if (first == h.size) {
                r = rings[c].data + at; /* in one piece: read in place (8 KiB a sample) */
            } else {
                memcpy(rec, rings[c].data + at, first);
                memcpy(rec + first, rings[c].data, h.size - first);
                r = rec;
            }
            if (h.type == PERF_RECORD_SAMPLE) {
                sample(out, r + sizeof(h), r + h.size);
            } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
                uint64_t lost;
                memcpy(&lost, r + sizeof(h) + 8, 8);
                st_lost += lost;
            } else if ((h.type == PERF_RECORD_FORK || h.type == PERF_RECORD_EXIT) &&
                       h.size >= sizeof(h) + 16) {
                uint32_t ids[4]; /* pid, ppid, tid, ptid */
                memcpy(ids, r + sizeof(h), sizeof(ids));
                if ((pid_t)ids[0] == self)
                    tid_mark((pid_t)ids[2], h.type == PERF_RECORD_FORK);
            }
            tail += h.size;
        }
        __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    }
    before = st_samples - before;
    pthread_mutex_unlock(&plock);
    return (int)before;
}

void
pe_perf_keep_recent(int yes)
{
    pthread_mutex_lock(&plock);
    if (yes && on && !recent)
        (void)recent_alloc();   /* (none: the wall ticks find no stacks, and say so) */
    else if (!yes && publish) { /* (a wall-only engine keeps them until it stops) */
        free(recent);
        recent = NULL;
    }
    pthread_mutex_unlock(&plock);
}

int
pe_perf_recent(pid_t tid, uint64_t since, uintptr_t *pcs, int max)
{
    int n = 0;

    pthread_mutex_lock(&plock);
    if (on && recent) {
        const recent_t *r = &recent[(uint32_t)tid & (recent_slots - 1)];
        if (r->tid == tid && r->t >= since && r->n > 0) {
            n = r->n < max ? r->n : max;
            memcpy(pcs, r->pcs, (size_t)n * sizeof(pcs[0]));
        } else if (r->tid != tid && r->t >= since && r->n > 0) {
            n = -1; /* another thread's, fresh: it took tid's slot */
        }
    }
    pthread_mutex_unlock(&plock);
    return n;
}

void
pe_perf_stats(pe_perf_stats_t *st)
{
    pthread_mutex_lock(&plock);
    st->samples = st_samples;
    st->lost = st_lost;
    st->deep = st_deep;
    st->unseen = st_unseen;
    st->taken = pe_fd_bulk_taken();
    st->recent_slots = recent ? (int)recent_slots : 0;
    st->fds = on ? nev + ncpu + 1 : 0;
    st->fds_peak = st_fds_peak;
    st->rings_peak = st_rings_peak;
    st->rings = on ? ncpu : 0;
    st->ring_kib = ring_pages * (uint64_t)getpagesize() / 1024;
    pthread_mutex_unlock(&plock);
}

void
pe_perf_atfork_child(void)
{
    /* the rings were not copied (VM_DONTCOPY): forget them; close our copies
       of the descriptors (the parent's events stay the parent's) */
    pthread_mutex_init(&plock, NULL);
    pe_fd_bulk_atfork_child();
    if (!on)
        return;
    on = 0;
    for (int i = 0; i < nev; i++)
        close_ours(evfds[i], "perf_event");
    nev = 0;
    for (int c = 0; c < ncpu; c++) {
        close_ours(rings[c].fd, "perf_event");
        rings[c].meta = NULL;
    }
    ncpu = 0;
    close_ours(kick_fd, "eventfd");
    kick_fd = -1;
    covered = NULL; /* (a private mapping the child has a copy of: left) */
    recent = NULL;  /* (idem, a heap copy) */
}
