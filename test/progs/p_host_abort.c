/* p_host_abort: a child (this program again, exec'd, so the library serves
 * in it) calls abort() from a thread while the parent holds CPU and
 * wall-clock profiles and stack captures open on it.  The parent checks that
 * the child died of SIGABRT with the same core-dump flag as the same child
 * without the library (cores go to a temporary directory, 1 MiB at most),
 * within 10 s of the abort.  Twice.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "p_host.h"

static char addr[64];

static void *
ask(void *path)
{
    row_http(addr, path, NULL, 0, NULL);
    return NULL;
}

static void *
aborter(void *arg)
{
    row_spin(0.6);
    abort();
}

/* Run the child (with or without the library); its wait status. */
static int
child_status(int with_lib, const char *dir)
{
    pthread_t q[3];
    pid_t pid = fork();
    double t0;
    int st;

    if (pid == 0) {
        struct rlimit rl = {1 << 20, 1 << 20};
        setrlimit(RLIMIT_CORE, &rl);
        if (chdir(dir))
            _exit(30);
        if (!with_lib)
            unsetenv("LD_PRELOAD");
        execl("/proc/self/exe", "p_host_abort", "child", (char *)NULL);
        _exit(31);
    }
    if (with_lib) {
        if (row_addr_of(pid, addr, sizeof(addr), 10) < 0)
            row_fail("no port file from the child");
        pthread_create(&q[0], NULL, ask, "/profile?duration=5&delay=0.001");
        pthread_create(&q[1], NULL, ask, "/profile_wall?duration=5&delay=0.001");
        pthread_create(&q[2], NULL, ask, "/debug/pprof/goroutine?debug=2");
    }
    t0 = row_now();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (row_now() - t0 > 15) {
            kill(pid, SIGKILL);
            row_fail("the aborting child hangs");
        }
        row_sleep(0.02);
    }
    if (with_lib)
        for (int i = 0; i < 3; i++)
            pthread_join(q[i], NULL);
    return st;
}

int
main(int argc, char **argv)
{
    char dir[] = "/tmp/pe-host-abort.XXXXXX", cmd[128];
    int base, st;

    if (argc > 1) { /* the child */
        pthread_t t;
        pthread_create(&t, NULL, aborter, NULL);
        for (;;)
            free(malloc(100)), row_spin(0.01);
    }
    if (!mkdtemp(dir))
        row_fail("mkdtemp");
    base = child_status(0, dir);
    if (!WIFSIGNALED(base) || WTERMSIG(base) != SIGABRT)
        row_fail("without the library: status %#x", base);
    for (int i = 0; i < 2; i++) {
        st = child_status(1, dir);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
            row_fail("with the library: status %#x, not SIGABRT", st);
        if (!!WCOREDUMP(st) != !!WCOREDUMP(base))
            row_fail("core dumped %d with the library, %d without", !!WCOREDUMP(st),
                     !!WCOREDUMP(base));
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd))
        row_fail("rm");
    printf("figure: abort: SIGABRT, core flag %d as without the library\n", !!WCOREDUMP(base));
    row_done();
}
