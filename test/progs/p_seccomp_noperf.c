/* p_seccomp_noperf: a launcher, as a container runtime confines what it
 * starts: it installs a seccomp filter that answers perf_event_open with
 * EPERM (SCMP_ACT_ERRNO) and allows every other system call, then execs
 * argv[1..] under it (the filter and no_new_privs survive exec).  With
 * LD_PRELOAD and PROFEP_SECCOMP=serve in the environment the library serves
 * there, and its CPU profiles must come from the timer engine, saying why
 * (test/e2e/e2e_cpu_fallback.sh).
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    scmp_filter_ctx ctx;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    if (!(ctx = seccomp_init(SCMP_ACT_ALLOW)))
        return 3;
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(perf_event_open), 0) < 0)
        return 4;
    if ((rc = seccomp_load(ctx)) < 0) { /* sets no_new_privs itself (unprivileged) */
        fprintf(stderr, "seccomp_load: %s\n", strerror(-rc));
        return 5;
    }
    seccomp_release(ctx);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "%s: exec %s: %s\n", argv[0], argv[1], strerror(errno));
    return 127;
}
