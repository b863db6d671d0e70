/*
 * p_seccomp_exec: a launcher, as a container runtime confines what it starts
 * (Docker's default profile answers what it forbids with EPERM): it installs
 * a seccomp filter answering EPERM to perf_event_open, with -t to
 * timer_create too, with -n to neither (a filter all the same), then execs
 * argv.  The library comes with the LD_PRELOAD of argv's environment: start
 * it as `env LD_PRELOAD= p_seccomp_exec [-t|-n] env LD_PRELOAD=lib PROG...`.
 * No libseccomp: a raw BPF program.
 *
 *   p_seccomp_exec [-t|-n] PROG [ARGS...]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "p_seccomp_exec: add this architecture's AUDIT_ARCH"
#endif

int
main(int argc, char **argv)
{
    int timers = argc > 1 && !strcmp(argv[1], "-t"), none = argc > 1 && !strcmp(argv[1], "-n");
    unsigned eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* perf_event_open unless -n, timer_create when -t; else a number no call has */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, none ? 0xffffffffu : SYS_perf_event_open, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, timers ? SYS_timer_create : 0xffffffffu, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, eperm),
    };
    struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
    char **av = argv + 1 + (timers || none);

    if (!*av) {
        fprintf(stderr, "usage: p_seccomp_exec [-t|-n] PROG [ARGS...]\n");
        return 2;
    }
    /* unprivileged filters need no_new_privs */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        fprintf(stderr, "p_seccomp_exec: seccomp: %s\n", strerror(errno));
        return 1;
    }
    execvp(av[0], av);
    fprintf(stderr, "p_seccomp_exec: %s: %s\n", av[0], strerror(errno));
    return 127;
}
