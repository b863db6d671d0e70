/* p_host_snapexit: a child (this program again, exec'd, heap rate 1 so its
 * snapshot is large) holding ~40,000 live sampled blocks calls exit(5) from a
 * second thread while the parent streams its /heap_snapshot (twice at once).
 * The child's stdio data written before must be complete in its file, its
 * status 5, and it must be gone within 10 s.  Three times.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "p_host.h"

static char addr[64];

static void *
snap(void *arg)
{
    row_http(addr, "/heap_snapshot", NULL, 0, NULL);
    return NULL;
}

static void *
exiter(void *arg)
{
    row_sleep(*(double *)arg);
    exit(5);
}

int
main(int argc, char **argv)
{
    char path[] = "/tmp/pe-host-snapexit.XXXXXX";

    if (argc > 2) { /* the child: argv[1] the data file, argv[2] when to exit */
        static double when;
        FILE *f = fopen(argv[1], "w");
        pthread_t t;
        if (!f)
            return 9;
        for (int i = 0; i < 40000; i++)
            if (!malloc(64 + (size_t)(i % 64)))
                return 8;
        for (int i = 0; i < 20000; i++)
            fprintf(f, "line %d\n", i);
        when = atof(argv[2]);
        pthread_create(&t, NULL, exiter, &when);
        for (;;)
            row_sleep(1);
    }
    for (int round = 0; round < 3; round++) {
        int fd = mkstemp(path), st, lines = 0;
        char when[16], buf[64];
        pthread_t q[2];
        pid_t pid;
        double t0;
        FILE *f;

        if (fd < 0)
            row_fail("mkstemp");
        close(fd);
        snprintf(when, sizeof(when), "%.2f", 0.3 + 0.2 * round);
        pid = fork();
        if (pid == 0) {
            setenv("PROFEP_HEAP_RATE", "1", 1);
            execl("/proc/self/exe", "p_host_snapexit", path, when, (char *)NULL);
            _exit(31);
        }
        if (row_addr_of(pid, addr, sizeof(addr), 10) < 0)
            row_fail("no port file from the child");
        for (int i = 0; i < 2; i++)
            pthread_create(&q[i], NULL, snap, NULL);
        t0 = row_now();
        while (waitpid(pid, &st, WNOHANG) == 0) {
            if (row_now() - t0 > 10) {
                kill(pid, SIGKILL);
                row_fail("the child did not exit within 10 s");
            }
            row_sleep(0.02);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(q[i], NULL);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 5)
            row_fail("child status %#x, want exit 5", st);
        f = fopen(path, "r");
        while (f && fgets(buf, sizeof(buf), f))
            lines++;
        if (f)
            fclose(f);
        unlink(path);
        if (lines != 20000)
            row_fail("the child's data file has %d lines of 20000", lines);
        memcpy(path + strlen(path) - 6, "XXXXXX", 6);
    }
    row_done();
}
