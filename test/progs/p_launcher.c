/*
 * p_launcher: a tree whose root is a launcher that exits, as pg_ctl,
 * apachectl or a shell script is (e2e_tree_launcher.sh).  The launcher forks
 * a long-lived child (a daemon), which forks 2 members; after argv[1] ms
 * (default 800) the launcher exits 0.  Each process prints its role and pid
 * ("child PID", "member PID"), and every one of them burns a little CPU in
 * launcher_burn() between 20 ms polls for argv[2] s (default 30), then exits.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void
launcher_burn(void)
{
    double x = 1, end = now() + 0.002;

    while (now() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void
live(const char *what, double seconds)
{
    double end = now() + seconds;

    printf("%s %d\n", what, (int)getpid());
    fflush(stdout);
    while (now() < end) {
        launcher_burn();
        poll(NULL, 0, 20);
    }
    exit(0);
}

int
main(int argc, char **argv)
{
    int ms = argc > 1 ? atoi(argv[1]) : 800;
    double seconds = argc > 2 ? atof(argv[2]) : 30;

    if (fork() == 0) {
        for (int i = 0; i < 2; i++)
            if (fork() == 0)
                live("member", seconds);
        live("child", seconds);
    }
    poll(NULL, 0, ms);
    printf("launcher exits\n");
    return 0;
}
