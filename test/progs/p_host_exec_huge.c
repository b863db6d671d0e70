/*
 * p_host_exec_huge (host-matrix row): a program that re-execs itself with
 * ~1.6 MB of arguments, GENS times (PE_ROW_GENS, default 8), ~250 ms of work
 * with a second thread in each image: a daemon's reload or binary upgrade.
 * Each image checks the arguments it got; odd generations exec with
 * execveat.  With PE_ROW_SELF_WALL=1 each image first asks its own server
 * for a 1000 Hz wall-clock profile, so that every exec lands inside it
 * (issue 15, point 1: our SIGPROF queued to the thread in execve used to
 * kill the new image, status 155).
 */
#include <fcntl.h>
#include <pthread.h>

#include "host_row.h"

extern char **environ;

#define NARGS 400
#define ARGLEN 4000 /* 400 x 4000 = 1.6 MB */

static volatile int stop;

static void
check_args(int argc, char **argv, int gen)
{
    if (argc != 2 + NARGS)
        row_fail("generation %d got %d arguments, not %d", gen, argc, 2 + NARGS);
    for (int i = 0; i < NARGS; i++) {
        const char *a = argv[2 + i];
        if (strlen(a) != ARGLEN - 1 || a[0] != 'a' + i % 26 || a[ARGLEN - 2] != 'a' + i % 26)
            row_fail("generation %d: argument %d is not what was passed", gen, i);
    }
}

int
main(int argc, char **argv)
{
    int gens = getenv("PE_ROW_GENS") ? atoi(getenv("PE_ROW_GENS")) : 8;
    int gen = argc > 1 ? atoi(argv[1]) : 0;
    pthread_t th;
    double t0;
    static char *nargv[2 + NARGS + 1];
    static char genbuf[32];

    if (gen > 0)
        check_args(argc, argv, gen);
    if (gen >= gens)
        row_done();
    if (pthread_create(&th, NULL, row_spinner, (void *)&stop) != 0)
        row_fail("pthread_create");
    (void)row_self_request("/profile_wall?duration=1&delay=0.001");
    t0 = row_now();
    while (row_now() - t0 < 0.25)
        ; /* work, sampled */
    stop = 1;
    pthread_join(th, NULL);
    snprintf(genbuf, sizeof(genbuf), "%d", gen + 1);
    nargv[0] = argv[0];
    nargv[1] = genbuf;
    for (int i = 0; i < NARGS; i++) {
        nargv[2 + i] = malloc(ARGLEN);
        if (!nargv[2 + i])
            row_fail("malloc");
        memset(nargv[2 + i], 'a' + i % 26, ARGLEN - 1);
        nargv[2 + i][ARGLEN - 1] = '\0';
    }
    nargv[2 + NARGS] = NULL;
    if (gen % 2) /* glibc 2.34's execveat too */
        execveat(AT_FDCWD, "/proc/self/exe", nargv, environ, 0);
    else
        execv("/proc/self/exe", nargv);
    row_fail("exec: %s", strerror(errno));
    return 1;
}
