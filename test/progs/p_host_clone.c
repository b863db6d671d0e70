/*
 * p_host_clone (host-matrix row): children made with clone() without
 * CLONE_THREAD, as container runtimes and some language runtimes do, for
 * PE_ROW_SECONDS (default 3): (a) a fork-like clone (own copy of memory, no
 * fork handlers run) whose child allocates and then execs /bin/true, (b) a
 * clone(CLONE_VM|CLONE_VFORK) child, as glibc's posix_spawn makes, that
 * execs /bin/true, and (c) a fork-like clone child that just allocates and
 * exits 5, and (d) glibc's _Fork (no fork handlers run) whose child execs
 * /bin/true.  Every status is checked.  Our state in these children is the
 * parent's (stale or shared): the library must not write it.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "host_row.h"

#define STACK (256 * 1024)

static volatile int stop;

static int
child_exec(void *arg)
{
    if (arg) /* the fork-like one may allocate: its memory is its own */
        for (int i = 0; i < 1000; i++)
            free(malloc((size_t)(i % 512) + 1));
    execl("/bin/true", "true", (char *)NULL);
    _exit(127);
}

static int
child_alloc(void *unused)
{
    for (int i = 0; i < 10000; i++)
        free(malloc((size_t)(i % 4096) + 1));
    _exit(5);
}

static void
one(int (*fn)(void *), void *arg, int flags, char *stack, int want)
{
    int status;
    pid_t pid = clone(fn, stack + STACK, flags | SIGCHLD, arg);

    if (pid < 0)
        row_fail("clone: %s", strerror(errno));
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            row_fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != want)
        row_fail("clone child (flags 0x%x): status 0x%x, wanted exit %d", flags, status, want);
}

int
main(void)
{
    double secs = getenv("PE_ROW_SECONDS") ? atof(getenv("PE_ROW_SECONDS")) : 3;
    double t0 = row_now();
    char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_t th;
    long n = 0;

    if (stack == MAP_FAILED)
        row_fail("mmap");
    if (pthread_create(&th, NULL, row_spinner, (void *)&stop) != 0)
        row_fail("pthread_create");
    while (row_now() - t0 < secs) {
        one(child_exec, (void *)1, 0, stack, 0);
        one(child_exec, NULL, CLONE_VM | CLONE_VFORK, stack, 0);
        one(child_alloc, NULL, 0, stack, 5);
        {
            int status;
            pid_t pid = _Fork();
            if (pid < 0)
                row_fail("_Fork: %s", strerror(errno));
            if (pid == 0) {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                    row_fail("waitpid: %s", strerror(errno));
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                row_fail("_Fork child: status 0x%x", status);
        }
        n++;
    }
    stop = 1;
    pthread_join(th, NULL);
    fprintf(stderr, "clone rounds: %ld\n", n);
    row_done();
    return 0;
}
