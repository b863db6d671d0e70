/*
 * p_cpu_sigprof: a program with its own SIGPROF handler.  It sleeps argv[1]
 * seconds (profiling requests should get 503 meanwhile), then raises SIGPROF
 * and prints "handled=N" (1 when its handler is still the one installed).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int handled;

static void
on_prof(int sig)
{
    handled++;
}

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    struct sigaction sa = {0};

    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    usleep((useconds_t)(seconds * 1e6));
    raise(SIGPROF);
    printf("handled=%d\n", handled);
    return 0;
}
