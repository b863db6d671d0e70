/* p_host_seccompkill: children started under a seccomp filter that KILLS the
 * process on timer_create and rt_tgsigqueueinfo (a child installs it, then
 * execs this program again, which loads the library under it).  By default
 * the library sees the filter at load, says so in one line and stays
 * dormant: no server, no port file, the child exits 0.  With
 * PROFEP_SECCOMP=serve it serves, and answers 503 on the signal-based
 * endpoints instead of dying; heap answers 200.  The parent checks both
 * children's answers and that each exits 0, not of SIGSYS.
 */
#include <signal.h>
#include <sys/wait.h>

#include "p_host.h"
#include "p_host_seccomp.h"

static void
expect(const char *addr, const char *path, int want)
{
    char body[512];
    int st = row_http(addr, path, body, sizeof(body), NULL);

    if (st != want || (want == 503 && !strstr(body, "seccomp")))
        row_fail("child %s: status %d, want %d: %.200s", path, st, want, body);
}

static pid_t
start_child(const char *self, const char *seccomp_setting)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (seccomp_setting)
            setenv("PROFEP_SECCOMP", seccomp_setting, 1);
        if (row_seccomp(SECCOMP_RET_KILL_PROCESS, 0))
            _exit(20);
        execl("/proc/self/exe", self, "child", (char *)NULL);
        _exit(21);
    }
    return pid;
}

static void
expect_exit0(pid_t pid)
{
    int st;

    if (waitpid(pid, &st, 0) != pid)
        row_fail("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        row_fail("child status %#x (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int
main(int argc, char **argv)
{
    char addr[64];
    pid_t pid;

    if (argc > 1) { /* a child, under the filter */
        double end = row_now() + 3;
        while (row_now() < end) {
            free(malloc(300));
            row_spin(0.01);
        }
        return 0;
    }
    /* default: dormant (it writes no port file) and unharmed */
    pid = start_child(argv[0], NULL);
    if (row_addr_of(pid, addr, sizeof(addr), 2) == 0)
        row_fail("a child started under a filter serves by default (%s)", addr);
    expect_exit0(pid);
    /* PROFEP_SECCOMP=serve: served, without the signal-based endpoints */
    pid = start_child(argv[0], "serve");
    if (row_addr_of(pid, addr, sizeof(addr), 10) < 0)
        row_fail("no port file from the child with PROFEP_SECCOMP=serve");
    expect(addr, "/profile?duration=0.5&delay=0.001", 503);
    expect(addr, "/profile_wall?duration=0.5&delay=0.001", 503);
    expect(addr, "/debug/pprof/goroutine?debug=2", 503);
    expect(addr, "/debug/pprof/heap?debug=1", 200);
    expect_exit0(pid);
    row_done();
}
