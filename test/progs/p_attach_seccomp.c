/*
 * p_attach_seccomp: installs a seccomp filter that allows every call
 * (Seccomp: 2 in /proc/PID/status), prints "ready" and waits in read on its
 * stdin; exits 0 when it closes.  profep attach must refuse it untouched.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int
main(void)
{
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {1, allow};
    char buf[64];

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
        perror("seccomp");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    return 0;
}
