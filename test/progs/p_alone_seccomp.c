/* p_alone_seccomp: a libseccomp program, as services confine themselves:
 * after 1 s of work it installs a filter with a short allow list (write,
 * sleeping, memory, exit) synchronised to every thread (TSYNC), whose default
 * action is argv[1]: "kill-process" (SCMP_ACT_KILL_PROCESS) or
 * "kill-thread" (SCMP_ACT_KILL_THREAD), then works on for 1.5 s (computing,
 * allocating, sleeping) and prints its result.  Its output and exit status
 * are the same with and without the library: test/e2e/e2e_alone.sh compares
 * them, with no request made and with profiles running.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no system call */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Work for s seconds: arithmetic, allocations, short sleeps; a checksum. */
static unsigned long
work(double s)
{
    unsigned long sum = 0, rounds = 0;
    double end = now() + s;

    while (now() < end) {
        struct timespec ts = {0, 2000000L};
        for (unsigned long i = 0; i < 20000; i++)
            sum += i * 2654435761u;
        for (int i = 0; i < 64; i++) {
            char *p = malloc(64 + (size_t)i * 512);
            if (p) {
                p[0] = (char)i;
                sum += (unsigned char)p[0];
            }
            free(p);
        }
        nanosleep(&ts, NULL);
        rounds++;
    }
    return rounds ? 1 : 0; /* the sums depend on speed; the result must not */
}

int
main(int argc, char **argv)
{
    static const int allow[] = {SCMP_SYS(write),
                                SCMP_SYS(exit),
                                SCMP_SYS(exit_group),
                                SCMP_SYS(nanosleep),
                                SCMP_SYS(clock_nanosleep),
                                SCMP_SYS(brk),
                                SCMP_SYS(mmap),
                                SCMP_SYS(munmap),
                                SCMP_SYS(madvise),
                                SCMP_SYS(rt_sigreturn),
                                SCMP_SYS(futex)};
    uint32_t action;
    scmp_filter_ctx ctx;
    unsigned long r;
    int rc;

    if (argc < 2 || (strcmp(argv[1], "kill-process") && strcmp(argv[1], "kill-thread"))) {
        fprintf(stderr, "usage: %s kill-process|kill-thread\n", argv[0]);
        return 2;
    }
    action = !strcmp(argv[1], "kill-process") ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL_THREAD;
    /* stdout's first write looks at the file (newfstatat): before the filter */
    printf("working\n");
    fflush(stdout);
    r = work(1.0);
    if (!(ctx = seccomp_init(action)))
        return 3;
    for (size_t i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
        if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0) < 0)
            return 4;
    if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) < 0)
        return 5;
    if ((rc = seccomp_load(ctx)) < 0) {
        fprintf(stderr, "seccomp_load: %s\n", strerror(-rc));
        return 6;
    }
    /* no seccomp_release (it may free into a filtered world: fine, but not needed) */
    printf("filter installed (%s)\n", argv[1]);
    fflush(stdout);
    r += work(1.5);
    printf("result %lu\n", r);
    fflush(stdout);
    return 0;
}
