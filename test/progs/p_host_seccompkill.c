/* p_host_seccompkill: a child started under a seccomp filter that KILLS the
 * process on timer_create and rt_tgsigqueueinfo (the parent's child installs
 * it, then execs this program again, which loads the library under it).  The
 * library must see the filter at load, say so in one line, and answer 503 on
 * the signal-based endpoints instead of dying; heap answers 200.  The parent
 * asks the child's endpoints and checks that it exits 0, not of SIGSYS.
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

int
main(int argc, char **argv)
{
    char addr[64];
    pid_t pid;
    int st;

    if (argc > 1) { /* the child, under the filter */
        double end = row_now() + 3;
        while (row_now() < end) {
            free(malloc(300));
            row_spin(0.01);
        }
        return 0;
    }
    pid = fork();
    if (pid == 0) {
        if (row_seccomp(SECCOMP_RET_KILL_PROCESS, 0))
            _exit(20);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(21);
    }
    if (row_addr_of(pid, addr, sizeof(addr), 10) < 0)
        row_fail("no port file from the child");
    expect(addr, "/profile?duration=0.5&delay=0.001", 503);
    expect(addr, "/profile_wall?duration=0.5&delay=0.001", 503);
    expect(addr, "/debug/pprof/goroutine?debug=2", 503);
    expect(addr, "/debug/pprof/heap?debug=1", 200);
    if (waitpid(pid, &st, 0) != pid)
        row_fail("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        row_fail("child status %#x (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    row_done();
}
