/*
 * u_base.c: the shared primitives of preload/ that every module uses: the
 * stack interner (one id per stack, also when threads race to add it; the
 * bound), the generator (uniform mean, interval mean, every bit used), the
 * spin lock under contention (and its signal-blocking form), the clock, the
 * page-start test, the hand-on of a program's SIG_IGN (sigown.h), and the
 * /proc reader (proc.h: stat fields, the task list, state names, boot time,
 * the thread count), and pe.h's rounding.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../heap/heap.h"
#include "../../preload/clock.h"
#include "../../preload/proc.h"
#include "../../preload/rand.h"
#include "../../preload/sigown.h"
#include "../../preload/spin.h"
#include "../../preload/stacktab.h"
#include "pe_test.h"

/* ---- stacktab ----------------------------------------------------------------- */

#define CAP 1024u
#define FRAMES_CAP (CAP * 16u)
#define NSTACKS 32
#define NTHREADS 4

static uint32_t buckets[2 * CAP];
static pe_stacktab_ent_t ents[CAP];
static uintptr_t frames[FRAMES_CAP];
static pe_stacktab_t tab;

/* Stack k: 2 + k % 9 frames, the root shared by every stack (as main is). */
static int
make_stack(int k, uintptr_t *pcs)
{
    int n = 2 + k % 9;

    for (int i = 0; i < n; i++)
        pcs[i] = i == n - 1 ? 0x400000 : 0x500000 + (uintptr_t)k * 0x100 + (uintptr_t)i * 8;
    return n;
}

static void
tab_reset(uint32_t cap, uint32_t frames_cap, uint32_t reserved)
{
    memset(buckets, 0, sizeof(buckets));
    memset(ents, 0, sizeof(ents));
    pe_stacktab_setup(&tab, buckets, ents, frames, cap, frames_cap, reserved);
}

static void
test_stacktab_single(void)
{
    uintptr_t pcs[16], back[16];
    uint32_t id[NSTACKS];
    int n;

    tab_reset(CAP, FRAMES_CAP, 2);
    CHECK(pe_stacktab_count(&tab) == 2);
    CHECK(pe_stacktab_ent(&tab, 0) && pe_stacktab_ent(&tab, 1));
    CHECK(pe_stacktab_frames(&tab, 1, back, 16) == 0);
    for (int k = 0; k < NSTACKS; k++) {
        n = make_stack(k, pcs);
        id[k] = pe_stacktab_intern(&tab, 0, pcs, n);
        CHECK(id[k] >= 2 && id[k] != PE_STACKTAB_FULL);
    }
    for (int k = 0; k < NSTACKS; k++) {
        n = make_stack(k, pcs);
        CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == id[k]);
        CHECK(pe_stacktab_frames(&tab, id[k], back, 16) == n &&
              !memcmp(back, pcs, n * sizeof(*pcs)));
        for (int j = 0; j < k; j++)
            CHECK(id[j] != id[k]);
    }
    /* the same stack under another tag is another entry */
    n = make_stack(3, pcs);
    CHECK(pe_stacktab_intern(&tab, 1, pcs, n) != id[3]);
    CHECK(pe_stacktab_ent(&tab, pe_stacktab_intern(&tab, 1, pcs, n))->tag == 1);
    CHECK(pe_stacktab_count(&tab) == 2 + NSTACKS + 1);
    CHECK(pe_stacktab_ent(&tab, CAP + 5) == NULL);

    /* full: records, then frames; the counters never pass the bound by much */
    tab_reset(8, FRAMES_CAP, 1);
    for (int k = 0; k < 7; k++) {
        n = make_stack(k, pcs);
        CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == (uint32_t)k + 1);
    }
    n = make_stack(7, pcs);
    for (int r = 0; r < 1000; r++)
        CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == PE_STACKTAB_FULL);
    CHECK(tab.next_ent == 8 && pe_stacktab_count(&tab) == 8);
    n = make_stack(2, pcs);
    CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == 3); /* known stacks still found */
    tab_reset(CAP, 10, 0);
    n = make_stack(8, pcs); /* 10 frames: the arena's all */
    CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == 0);
    CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == 0);
    n = make_stack(7, pcs); /* 9 more do not fit */
    CHECK(pe_stacktab_intern(&tab, 0, pcs, n) == PE_STACKTAB_FULL);
    CHECK(pe_stacktab_ent(&tab, 1) == NULL); /* its record claimed, never published */
}

/*
 * The race: every thread adds the same new stacks in the same order, released
 * together by a spinning start flag (a barrier wakes them one by one), so
 * that two of them often find the same empty slot and one loses the CAS.
 */
#define RNSTACKS 8
#define RROUNDS 2000
static int go_round = -1, done_count;
static uint32_t seen[NTHREADS][RNSTACKS];
static int bad, published_bad, lost;

static void *
racer(void *arg)
{
    int t = (int)(intptr_t)arg;
    uintptr_t pcs[16];

    for (int r = 0; r < RROUNDS; r++) {
        for (int spins = 0; __atomic_load_n(&go_round, __ATOMIC_ACQUIRE) < r; spins++)
            if (spins > 1000)
                sched_yield();
        for (int k = 0; k < RNSTACKS; k++) {
            int n = make_stack(k + r % 4 * RNSTACKS, pcs);
            seen[t][k] = pe_stacktab_intern(&tab, 0, pcs, n);
        }
        __atomic_add_fetch(&done_count, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}

static void
test_stacktab_race(void)
{
    pthread_t th[NTHREADS];
    int nthreads = 4;

    tab_reset(CAP, FRAMES_CAP, 0);
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, racer, (void *)(intptr_t)t);
    for (int r = 0; r < RROUNDS; r++) {
        __atomic_store_n(&go_round, r, __ATOMIC_RELEASE);
        while (__atomic_load_n(&done_count, __ATOMIC_ACQUIRE) < (r + 1) * nthreads)
            sched_yield();
        for (int k = 0; k < RNSTACKS; k++) {
            uint32_t id = seen[0][k];
            int published = 0;
            for (int t = 1; t < nthreads; t++)
                bad += seen[t][k] != id;
            bad += id == PE_STACKTAB_FULL;
            for (uint32_t i = 0; i < pe_stacktab_count(&tab); i++) {
                const pe_stacktab_ent_t *e = pe_stacktab_ent(&tab, i);
                uintptr_t pcs[16];
                int n = make_stack(k + r % 4 * RNSTACKS, pcs);
                if (e && e->n == n && !memcmp(frames + e->off, pcs, n * sizeof(*pcs)))
                    published++;
            }
            published_bad += published != 1; /* a race's loser is never published */
        }
        lost += pe_stacktab_count(&tab) - RNSTACKS; /* records of lost races */
        tab_reset(CAP, FRAMES_CAP, 0);
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    CHECKF(bad == 0, "%d stacks got different ids in one round", bad);
    CHECKF(published_bad == 0, "%d stacks published other than once", published_bad);
    printf("  stacktab race: %d lost CASes in %d rounds of %d threads\n", lost, RROUNDS, nthreads);
}

/* ---- rand --------------------------------------------------------------------- */

static void
test_rand(void)
{
    uint64_t a = 0, b = 0, s;
    double sum = 0, isum = 0, lo = 1, hi = 0;
    int bits[64] = {0}, bad_bits = 0;
    const int n = 1000000;
    const double mean = 1000;

    pe_rand_seed(&a);
    pe_rand_seed(&b);
    CHECK(a != 0 && b != 0 && a != b); /* same thread, same moment: the counter parts them */
    s = a;
    for (int i = 0; i < n; i++) {
        double u = pe_rand_unit(&s);
        uint64_t x = pe_rand_next(&s);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        /* an exponential interval of mean 1000 (heap/sample.c's kind of draw) */
        isum += -log(u) * mean;
        for (int k = 0; k < 64; k++)
            bits[k] += (int)(x >> k & 1);
    }
    CHECK(lo > 0 && hi <= 1);
    /* sd of the mean of n uniforms: 0.289/sqrt(n) = 0.0003; of the intervals: 1 */
    CHECKF(fabs(sum / n - 0.5) < 0.002, "uniform mean %.5f", sum / n);
    CHECKF(fabs(isum / n - mean) < 0.01 * mean, "interval mean %.2f, want %.0f +- 1%%", isum / n,
           mean);
    for (int k = 0; k < 64; k++)
        bad_bits += abs(bits[k] - n / 2) > n / 100; /* sd 500: 10 sd */
    CHECKF(bad_bits == 0, "%d bits far from half set", bad_bits);
}

/* ---- spin --------------------------------------------------------------------- */

#define SPIN_THREADS 4
#define SPIN_ITERS 200000

static pe_spin_t spin;
static volatile long counter; /* plain: only the lock keeps increments whole */
static int nosig_bad;

static void *
spinner(void *arg)
{
    for (int i = 0; i < SPIN_ITERS; i++) {
        if (arg && i % 1000 == 0) {
            sigset_t saved, cur;
            pe_spin_lock_nosig(&spin, &saved);
            pthread_sigmask(SIG_BLOCK, NULL, &cur);
            if (!sigismember(&cur, SIGUSR1) || !sigismember(&cur, SIGPROF))
                __atomic_add_fetch(&nosig_bad, 1, __ATOMIC_RELAXED);
            counter = counter + 1;
            pe_spin_unlock_nosig(&spin, &saved);
            pthread_sigmask(SIG_BLOCK, NULL, &cur);
            if (sigismember(&cur, SIGUSR1))
                __atomic_add_fetch(&nosig_bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        pe_spin_lock(&spin);
        counter = counter + 1;
        pe_spin_unlock(&spin);
    }
    return NULL;
}

static void
test_spin(void)
{
    pthread_t th[SPIN_THREADS];

    for (int t = 0; t < SPIN_THREADS; t++)
        pthread_create(&th[t], NULL, spinner, t % 2 ? (void *)1 : NULL);
    for (int t = 0; t < SPIN_THREADS; t++)
        pthread_join(th[t], NULL);
    CHECKF(counter == (long)SPIN_THREADS * SPIN_ITERS, "counter %ld", counter);
    CHECK(nosig_bad == 0);
    CHECK(spin.held == 0);
    pe_spin_lock(&spin);
    pe_spin_reset(&spin); /* a fork child freeing a lock its parent's thread held */
    pe_spin_lock(&spin);
    pe_spin_unlock(&spin);
    CHECK(spin.held == 0);
}

/* ---- clock, page start -------------------------------------------------------- */

static void
test_clock_page(void)
{
    int64_t m0 = pe_clock_ns(CLOCK_MONOTONIC), m1 = pe_clock_ns(CLOCK_MONOTONIC);
    int64_t r = pe_clock_ns(CLOCK_REALTIME), t = (int64_t)time(NULL);

    CHECK(m0 > 0 && m1 >= m0);
    CHECK(r / 1000000000 >= t - 1 && r / 1000000000 <= t + 1);
    CHECK(pe_clock_ns((clockid_t)12345) == 0);

    CHECK(pe_heap_at_page_start(0x7f0000001000));
    CHECK(pe_heap_at_page_start(0x7f0000001007));
    CHECK(!pe_heap_at_page_start(0x7f0000001008));
    CHECK(!pe_heap_at_page_start(0x7f0000001ff8));
    CHECK(pe_heap_at_page_start(0x7f0000010000)); /* a 64 KiB page's start too */
}

/* ---- sigown ------------------------------------------------------------------- */

static struct sigaction prog;
static const struct sigaction *
prog_disp(void)
{
    return &prog;
}

static void
our_handler(int sig, siginfo_t *si, void *uc)
{
}

/* What the kernel has for SIGUSR2: 'o' ours, 'i' SIG_IGN, 'd' SIG_DFL, '?' else. */
static char
kernel_has(void)
{
    struct sigaction cur;

    sigaction(SIGUSR2, NULL, &cur);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == our_handler)
        return 'o';
    return cur.sa_handler == SIG_IGN ? 'i' : cur.sa_handler == SIG_DFL ? 'd' : '?';
}

static void
test_sigown(void)
{
    pe_sigown_t o = {.sig = SIGUSR2, .handler = our_handler, .prog = prog_disp};
    int token;

    memset(&prog, 0, sizeof(prog));
    prog.sa_handler = SIG_IGN; /* the program ignores it: hand SIG_IGN on */
    CHECK(pe_sig_ignores(&prog) && !pe_sig_is_handler(&prog));
    CHECK(pe_sigown_install(&o) == 0 && kernel_has() == 'o');
    o.owned = 1;
    CHECK(pe_sigown_handon_begin(&o, 0) == 0 && kernel_has() == 'i');
    CHECK(pe_sigown_handon_begin(&o, 0) == 0 && kernel_has() == 'i'); /* a second spawn */
    pe_sigown_handon_end(&o, 0, 0);
    CHECK(kernel_has() == 'i' && o.handon_users == 1);
    pe_sigown_handon_end(&o, 0, 0);
    CHECK(kernel_has() == 'o' && o.handon_users == 0 && !o.handon_applied);
    pe_sigown_handon_end(&o, 0, 0); /* unmatched: nothing */
    CHECK(kernel_has() == 'o' && o.handon_users == 0);
    /* foreign (vfork child): a token, nothing shared written */
    token = pe_sigown_handon_begin(&o, 1);
    CHECK(token == 1 && kernel_has() == 'i' && o.handon_users == 0);
    pe_sigown_handon_end(&o, 1, token);
    CHECK(kernel_has() == 'o');
    /* the program does not ignore it (SIG_DFL), or we do not own it: nothing changes */
    prog.sa_handler = SIG_DFL;
    CHECK(pe_sigown_handon_begin(&o, 0) == 0 && kernel_has() == 'o');
    CHECK(pe_sigown_handon_begin(&o, 1) == 0 && kernel_has() == 'o');
    pe_sigown_handon_end(&o, 0, 0);
    prog.sa_handler = SIG_IGN;
    o.owned = 0;
    CHECK(pe_sigown_handon_begin(&o, 0) == 0 && kernel_has() == 'o');
    pe_sigown_handon_end(&o, 0, 0);
    /* a fork child forgets hand-ons and the lock */
    o.owned = 1;
    pe_sigown_handon_begin(&o, 0);
    pe_spin_lock(&o.lock);
    pe_sigown_atfork_child(&o);
    CHECK(o.handon_users == 0 && !o.handon_applied && o.lock.held == 0);
    pe_sigown_install(&o);
    CHECK(kernel_has() == 'o');
    /* not set up (sig 0): every call does nothing */
    pe_sigown_t off = {.prog = prog_disp};
    CHECK(pe_sigown_handon_begin(&off, 0) == 0 && pe_sigown_handon_begin(&off, 1) == 0);
    pe_sigown_handon_end(&off, 0, 0);
    CHECK(off.handon_users == 0);
    signal(SIGUSR2, SIG_DFL);
}

/* ---- proc --------------------------------------------------------------------- */

static void *
proc_sleeper(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

static void
test_proc(void)
{
    pe_proc_stat_t st;
    pe_proc_tasks_t it;
    pthread_t th;
    pid_t tid, me = (pid_t)syscall(SYS_gettid);
    int seen_me = 0, n = 0;
    long long bt;

    CHECK(pthread_create(&th, NULL, proc_sleeper, NULL) == 0);
    CHECK(pe_proc_stat(0, 0, &st) == 0);
    CHECK(st.state == 'R');
    CHECK(st.ppid == getppid());
    CHECK(st.num_threads == 2);
    CHECK(st.starttime > 0);
    CHECK(pe_proc_stat(getpid(), me, &st) == 0 && st.state == 'R');
    CHECK(pe_proc_ppid(getpid()) == getppid());
    CHECK(pe_proc_stat(0, 0x3ffffff0, &st) == -ENOENT);
    CHECK(pe_proc_ppid(0x3ffffff0) == 0);
    CHECK(pe_proc_tasks_open(&it) == 0);
    while ((tid = pe_proc_tasks_next(&it)) > 0) {
        seen_me += tid == me;
        n++;
    }
    pe_proc_tasks_close(&it);
    CHECKF(seen_me == 1 && n == 2, "seen_me %d n %d", seen_me, n);
    bt = pe_proc_btime();
    CHECK(bt > 1000000000LL && bt <= time(NULL));
    CHECK(pe_proc_btime() == bt);
    CHECK(pe_proc_stat(0, 0, &st) == 0);
    CHECK(llabs(pe_proc_started(st.starttime) - (long long)time(NULL)) < 600);
    CHECK(!strcmp(pe_proc_state_name('R'), "running"));
    CHECK(!strcmp(pe_proc_state_name('t'), "tracing-stop"));
    CHECK(!strcmp(pe_proc_state_name('x'), "unknown"));
    CHECK(pe_proc_state_code_of("idle") == pe_proc_state_code('I'));
    CHECK(pe_proc_state_code_of("nonsense") == 0);
    CHECK(!strcmp(pe_proc_state_str(99), "unknown"));
    for (unsigned c = 0; c < PE_PROC_STATES; c++)
        CHECK(pe_proc_state_code_of(pe_proc_state_str(c)) == c);
    CHECK(!strcmp(pe_proc_thread_state(me), "running"));
    CHECK(!strcmp(pe_proc_thread_state(0x3ffffff0), "unknown"));
    {
        char buf[64];
        CHECK(pe_proc_task_read(me, "comm", buf, sizeof(buf)) > 0);
        CHECK(pe_proc_task_read(0x3ffffff0, "comm", buf, sizeof(buf)) == -ESRCH);
    }
    {
        /* the count from status agrees with the task list (this thread and th) */
        pe_proc_tasks_t tasks;
        long listed = 0;

        CHECK(pe_proc_tasks_open(&tasks) == 0);
        while (pe_proc_tasks_next(&tasks) > 0)
            listed++;
        pe_proc_tasks_close(&tasks);
        CHECK(listed >= 2);
        CHECKF(pe_proc_self_threads() == listed, "%ld threads, %ld listed", pe_proc_self_threads(),
               listed);
    }
    pthread_cancel(th);
    pthread_join(th, NULL);
}

/* The readers the other modules call instead of opening /proc themselves. */
static void
test_proc_readers(void)
{
    pid_t me = (pid_t)syscall(SYS_gettid);
    uint64_t run = 0, slices = 0;
    char buf[256];
    long nr = -7;
    int rc, fds[2], l, named = 0;
    pe_proc_fds_t it;

    CHECK(pe_proc_self_seccomp() >= 0); /* a container may run us under a filter */
    CHECK(pe_proc_self_rss() > 4096);
    CHECK(pe_proc_task_alive(me) == 1);
    CHECK(pe_proc_task_alive(0x3ffffff0) == 0);
    CHECKF(pe_proc_task_syscall(me, &nr) == 1 && nr == SYS_read, "nr %ld", nr); /* in read(2) */
    CHECK(pe_proc_task_syscall(0x3ffffff0, &nr) == -ESRCH);
    rc = pe_proc_task_schedstat(me, &run, &slices);
    CHECKF(rc == -ENOSYS || (rc == 0 && run > 0 && slices > 0), "rc %d run %llu slices %llu", rc,
           (unsigned long long)run, (unsigned long long)slices);
    rc = pe_proc_task_schedstat(0x3ffffff0, &run, &slices);
    CHECK(rc == -ESRCH || rc == -ENOSYS);
    CHECK(pe_proc_pid_read(0, "cmdline", buf, sizeof(buf)) > 0 && strstr(buf, "u_base"));
    CHECK(pe_proc_pid_read(getpid(), "comm", buf, sizeof(buf)) > 0);
    CHECK((rc = pe_proc_open(0, "cmdline")) >= 0 && close(rc) == 0);
    CHECK(!strcmp(pe_proc_self_exe_file(), "/proc/self/exe"));

    /* descriptors: a pipe's two ends are listed and named */
    CHECK(pipe(fds) == 0);
    CHECK(pe_proc_self_fd_link(fds[0], buf, sizeof(buf)) > 0 && !strncmp(buf, "pipe:[", 6));
    CHECK(pe_proc_self_fd_link(fds[0], buf, 2) == 1); /* cut to what fits, terminated */
    CHECK(pe_proc_self_fd_link(0x3ffffff, buf, sizeof(buf)) == -ENOENT);
    CHECKF(pe_proc_self_task_count() == 1, "%d threads", pe_proc_self_task_count());
    CHECK(pe_proc_fds_open(&it, 0) == 0);
    while ((rc = pe_proc_fds_next(&it)) >= 0)
        if (rc == fds[0] || rc == fds[1]) {
            l = pe_proc_fds_link(&it, rc, buf, sizeof(buf));
            named += l > 6 && !strncmp(buf, "pipe:[", 6);
        }
    pe_proc_fds_close(&it);
    CHECKF(named == 2, "named %d", named);
    close(fds[0]);
    close(fds[1]);
    CHECK(pe_proc_fds_open(&it, 0x3ffffff0) < 0);

    /* a listening socket is found by its port */
    {
        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sin);
        unsigned long inodes[4];
        struct stat st;
        int s = socket(AF_INET, SOCK_STREAM, 0);

        CHECK(s >= 0 && bind(s, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(s, 1) == 0);
        CHECK(getsockname(s, (struct sockaddr *)&sin, &len) == 0 && fstat(s, &st) == 0);
        rc = pe_proc_tcp_listeners(ntohs(sin.sin_port), inodes, 4);
        CHECKF(rc == 1 && inodes[0] == (unsigned long)st.st_ino, "rc %d", rc);
        close(s);
        CHECK(pe_proc_tcp_listeners(ntohs(sin.sin_port), inodes, 4) == 0);
    }

    /* the mappings, parsed: the vdso, this program's text, as many as the lines */
    {
        pe_proc_maps_t m;
        pe_proc_map_t e;
        int n = 0, lines = 0, vdso = 0, text = 0;

        CHECK(pe_proc_maps_open(&m) == 0);
        while (pe_proc_maps_entry(&m, &e) > 0) {
            n += e.lo < e.hi && strlen(e.perms) == 4;
            vdso += !strcmp(e.path, "[vdso]") && e.inode == 0 && (e.prot & PROT_EXEC);
            text +=
                strstr(e.path, "u_base") && e.path[0] == '/' && e.inode != 0 && e.perms[2] == 'x';
        }
        pe_proc_maps_close(&m);
        CHECK(pe_proc_maps_open(&m) == 0);
        while (pe_proc_maps_line(&m))
            lines++;
        pe_proc_maps_close(&m);
        CHECKF(n == lines && vdso == 1 && text >= 1, "n %d lines %d vdso %d text %d", n, lines,
               vdso, text);
    }
}

/* pe_round_i64 is llround without libm: the same answers, clamped where llround is undefined. */
static void
test_round(void)
{
    static const double v[] = {0,    0.4,  0.5,  0.6,        1.5,         2.5,           -0.4,
                               -0.5, -1.5, -2.5, 1e6 + 0.49, 123456789.5, -987654321.25, 4.5e15};

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        CHECKF(pe_round_i64(v[i]) == llround(v[i]), "%g: %lld, llround %lld", v[i],
               (long long)pe_round_i64(v[i]), llround(v[i]));
    CHECK(pe_round_i64(NAN) == 0);
    CHECK(pe_round_i64(1e300) == INT64_MAX);
    CHECK(pe_round_i64(-1e300) == INT64_MIN);
}

/* pe_proc_lines: short lines, an empty one, one longer than the buffer (cut, its tail
   skipped), and a last one without a newline; and /proc/self/maps itself. */
static void
test_proc_lines(void)
{
    char path[] = "/tmp/u_base_lines.XXXXXX", big[20000];
    pe_proc_lines_t it;
    char *line;
    int fd = mkstemp(path), n = 0, vdso = 0;
    FILE *f;

    CHECK(fd >= 0);
    if (fd < 0)
        return;
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    f = fdopen(fd, "w");
    fprintf(f, "one\n\n%s\ntwo\nlast", big);
    fclose(f);
    CHECK(pe_proc_lines_open(&it, path) == 0);
    CHECK((line = pe_proc_lines_next(&it)) && !strcmp(line, "one"));
    CHECK((line = pe_proc_lines_next(&it)) && !strcmp(line, ""));
    CHECK((line = pe_proc_lines_next(&it)) && strlen(line) == sizeof(it.buf) - 1 && line[0] == 'x');
    CHECK((line = pe_proc_lines_next(&it)) && !strcmp(line, "two"));
    CHECK((line = pe_proc_lines_next(&it)) && !strcmp(line, "last"));
    CHECK(pe_proc_lines_next(&it) == NULL);
    pe_proc_lines_close(&it);
    unlink(path);
    CHECK(pe_proc_lines_open(&it, "/nonexistent/file") == -ENOENT);
    CHECK(pe_proc_lines_open(&it, "/proc/self/maps") == 0);
    while ((line = pe_proc_lines_next(&it)) != NULL) {
        n++;
        vdso |= strstr(line, "[vdso]") != NULL && !strchr(line, '\n');
    }
    pe_proc_lines_close(&it);
    CHECK(n > 10 && vdso);
}

int
main(void)
{
    test_round();
    test_stacktab_single();
    test_stacktab_race();
    test_rand();
    test_spin();
    test_clock_page();
    test_sigown();
    test_proc();
    test_proc_readers();
    test_proc_lines();
    return pe_test_done();
}
