/* p_host_alone: a process that must be alone, as zygotes and sandboxes are.
 * Its two threads work (and allocate) while the harness profiles it; a fork
 * child lives on (it waits in poll for over a second, so a process tree
 * starts its server) and then, like Chromium's zygote, checks that it has a
 * single thread (fstatat(open("/proc"), "self/task/") has 3 links) before
 * each fork, and calls unshare(CLONE_NEWUSER), which the kernel refuses to a
 * process with other threads.  Then the parent joins its threads and does
 * the same, counting /proc/self/task's entries with opendir.  Each time,
 * "Threads:" in /proc/self/status must say 1 too: our threads are really
 * gone, not hidden.
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "p_host.h"

static volatile int stop;

static void *
work(void *arg)
{
    (void)arg;
    while (!stop) {
        free(malloc(300));
        row_spin(0.002);
    }
    return NULL;
}

/* Chromium's check (sandbox/linux/services/thread_helpers.cc). */
static int
single_by_nlink(void)
{
    struct stat st;
    int proc = open("/proc/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ok;

    if (proc < 0)
        return -1;
    ok = fstatat(proc, "self/task/", &st, 0) == 0 && st.st_nlink == 3;
    close(proc);
    return ok;
}

static int
entries_in_task(void)
{
    struct dirent *de;
    int n = 0;
    DIR *d = opendir("/proc/self/task");

    if (!d)
        return -1;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Before each of three forks: alone; then unshare(CLONE_NEWUSER).  0, or why not. */
static const char *
go_alone(int by_nlink)
{
    for (int i = 0; i < 3; i++) {
        pid_t pid;
        int st;

        if (by_nlink ? single_by_nlink() != 1 : entries_in_task() != 1)
            return "more than one thread before a fork";
        if (row_status_threads() != 1)
            return "Threads: in /proc/self/status is not 1";
        if ((pid = fork()) < 0)
            return "fork failed";
        if (pid == 0)
            _exit(entries_in_task() == 1 ? 0 : 1);
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return "a fork child had more than one thread";
    }
    if (unshare(CLONE_NEWUSER) < 0)
        return strerror(errno);
    return NULL;
}

int
main(void)
{
    pthread_t t[2];
    struct pollfd none = {.fd = -1};
    const char *why;
    pid_t child;
    int st;

    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    child = fork();
    if (child == 0) {
        /* lives on: a long wait (our tree starts its server here), then alone */
        poll(&none, 1, 1200);
        row_spin(0.2);
        if ((why = go_alone(1))) {
            fprintf(stderr, "ROW FAIL: child: %s\n", why);
            _exit(1);
        }
        _exit(0);
    }
    row_spin(1.5);
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        row_fail("the fork child did not get to be alone (status %#x)", st);
    if ((why = go_alone(0)))
        row_fail("%s", why);
    row_done();
}
