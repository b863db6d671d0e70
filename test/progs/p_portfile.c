/*
 * p_portfile: port files at a normal exit (e2e_portfile_exit.sh).  argv[2] is
 * the directory of PROFEP_PORT_FILE=DIR/pe.%p; a process waits (poll, up to
 * 10 s) until its own DIR/pe.PID exists, that is until it serves.
 *   p_portfile exit DIR   waits for its file, prints "served PID", exits 0.
 *   p_portfile hang DIR   waits for its file, prints "served PID", sleeps.
 *   p_portfile fork DIR   forks a child that waits for its own file, prints
 *                         "child PID" and exits 0; reaps it, waits for its
 *                         own file, prints "served PID", exits 0.
 *   p_portfile leave DIR  forks a child that waits for its own file, prints
 *                         "child PID" and sleeps (an heir); waits for its
 *                         own file, prints "served PID", exits 0.
 */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Wait in poll (a blocking call: a fork child's server starts from one). */
static int
wait_served(const char *dir)
{
    char path[PATH_MAX];
    int i;

    snprintf(path, sizeof(path), "%s/pe.%d", dir, (int)getpid());
    for (i = 0; i < 200; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        poll(NULL, 0, 50);
    }
    return -1;
}

int
main(int argc, char **argv)
{
    pid_t child;
    int st;

    if (argc < 3)
        return 2;
    if (!strcmp(argv[1], "leave")) {
        child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            if (wait_served(argv[2]) < 0)
                return 1;
            printf("child %d\n", (int)getpid());
            fflush(stdout);
            for (;;)
                pause();
        }
    }
    if (!strcmp(argv[1], "fork")) {
        child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            if (wait_served(argv[2]) < 0)
                return 1;
            printf("child %d\n", (int)getpid());
            return 0;
        }
        if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
    }
    if (wait_served(argv[2]) < 0)
        return 1;
    printf("served %d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(argv[1], "hang"))
        for (;;)
            pause();
    return 0;
}
