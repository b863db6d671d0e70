/*
 * p_host_exec_thread (host-matrix row): exec from a thread that is not the
 * main one, while the main thread waits and a third thread works, GENS times
 * (PE_ROW_GENS, default 8, ~250 ms each).  The kernel kills the other
 * threads and the exec'ing thread becomes the process's main thread; each
 * image checks its arguments.  PE_ROW_SELF_WALL=1: each image asks its own
 * server for a 1000 Hz wall-clock profile first (issue 15, point 1).
 */
#include <pthread.h>

#include "host_row.h"

static volatile int stop;
static char **g_argv;
static int g_gen;

static void *
execer(void *unused)
{
    static char genbuf[32], arg[64 * 1024];
    char *nargv[5];
    double t0 = row_now();

    while (row_now() - t0 < 0.25)
        ; /* work, sampled */
    memset(arg, 'x', sizeof(arg) - 1);
    snprintf(genbuf, sizeof(genbuf), "%d", g_gen + 1);
    nargv[0] = g_argv[0];
    nargv[1] = genbuf;
    nargv[2] = arg;
    nargv[3] = "last";
    nargv[4] = NULL;
    execv("/proc/self/exe", nargv);
    row_fail("execv from a thread: %s", strerror(errno));
    return NULL;
}

int
main(int argc, char **argv)
{
    int gens = getenv("PE_ROW_GENS") ? atoi(getenv("PE_ROW_GENS")) : 8;
    pthread_t a, b;

    g_argv = argv;
    g_gen = argc > 1 ? atoi(argv[1]) : 0;
    if (g_gen > 0 && (argc != 4 || strlen(argv[2]) != 64 * 1024 - 1 || strcmp(argv[3], "last")))
        row_fail("generation %d: arguments not as passed", g_gen);
    if (g_gen >= gens)
        row_done();
    (void)row_self_request("/profile_wall?duration=1&delay=0.001");
    if (pthread_create(&a, NULL, row_spinner, (void *)&stop) != 0 ||
        pthread_create(&b, NULL, execer, NULL) != 0)
        row_fail("pthread_create");
    pthread_join(b, NULL); /* never returns: the exec replaces us */
    row_fail("the exec'ing thread returned");
    return 1;
}
