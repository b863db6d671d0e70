/*
 * bench_startup: what loading the library adds to a program that exits at
 * once.  Usage: bench_startup RUNS LIB[,LIB2...] PROG [ARGS...].  Each round
 * runs PROG once per arm in turn (without, with LD_PRELOAD=each LIB, without
 * again) so that load on a shared machine hits every arm alike; the two
 * "without" arms give the A/A noise floor.  Two LIBs compare two builds
 * (before and after a change) in the same run.  Per arm: median wall time from fork to reaped exit,
 * its 10th-90th percentile spread, and the median CPU time (user + system,
 * from wait4, every thread of the child).  The environment is passed on
 * (PROFEP_ADDR and friends apply to the "with" arm only through it).
 * Prints numbers; never passes or fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One run: wall and CPU time in microseconds; -1 when it did not exit 0. */
static int
run(const char *preload, char **argv, double *wall, double *cpu)
{
    struct rusage ru;
    double t0 = now_us();
    int status;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
        execvp(argv[0], argv);
        _exit(127);
    }
    if (wait4(pid, &status, 0, &ru) != pid)
        return -1;
    *wall = now_us() - t0;
    *cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 +
           ru.ru_stime.tv_usec;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
pct(double *v, int n, double p)
{
    return v[(int)(p * (n - 1) + 0.5)];
}

#define MAX_ARMS 6

int
main(int argc, char **argv)
{
    const char *lib[MAX_ARMS] = {NULL};
    char name[MAX_ARMS][48], *libs;
    double *wall[MAX_ARMS], *cpu[MAX_ARMS], med[MAX_ARMS], cmed[MAX_ARMS];
    int runs, r, a, arms = 1, bad = 0;

    if (argc < 4 || (runs = atoi(argv[1])) < 1) {
        fprintf(stderr, "usage: bench_startup RUNS LIB[,LIB2...] PROG [ARGS...]\n");
        return 2;
    }
    snprintf(name[0], sizeof(name[0]), "without");
    libs = strdup(argv[2]);
    for (char *t = strtok(libs, ","); t && arms < MAX_ARMS - 1; t = strtok(NULL, ",")) {
        const char *base = strrchr(t, '/');
        lib[arms] = t;
        snprintf(name[arms++], sizeof(name[0]), "with %.38s", base ? base + 1 : t);
    }
    snprintf(name[arms++], sizeof(name[0]), "without (A/A)");
    for (a = 0; a < arms; a++) {
        wall[a] = calloc((size_t)runs, sizeof(double));
        cpu[a] = calloc((size_t)runs, sizeof(double));
    }
    for (r = 0; r < runs; r++)
        for (a = 0; a < arms; a++)
            if (run(lib[a], argv + 3, &wall[a][r], &cpu[a][r]) < 0)
                bad++;
    for (a = 0; a < arms; a++) {
        qsort(wall[a], (size_t)runs, sizeof(double), cmp);
        qsort(cpu[a], (size_t)runs, sizeof(double), cmp);
        med[a] = pct(wall[a], runs, 0.5);
        cmed[a] = pct(cpu[a], runs, 0.5);
        printf("  %-28s wall median %6.0f us (p10 %6.0f, p90 %6.0f); cpu median %5.0f us\n",
               name[a], med[a], pct(wall[a], runs, 0.1), pct(wall[a], runs, 0.9), cmed[a]);
    }
    for (a = 1; a < arms; a++)
        printf("  %-33s wall %+6.0f us, cpu %+5.0f us\n", name[a], med[a] - med[0],
               cmed[a] - cmed[0]);
    if (bad)
        printf("  %d runs did not exit 0\n", bad);
    return 0;
}
