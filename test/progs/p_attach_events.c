/*
 * p_attach_events.c: process events after an attach (e2e_attach_events.sh).
 * Prints "waiting"; once the file argv[1] exists: starts a thread from
 * spawn_late (which blocks on a pipe), closes every descriptor from 3 up
 * (close loop, then closefrom(3): what daemons do), forks a child that
 * exits 7 and reaps it, and prints "done STATUS"; exits 0 when stdin closes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int pipefd[2];

static void *
late(void *arg)
{
    char c;

    (void)!read(pipefd[0], &c, 1);
    return NULL;
}

__attribute__((noinline)) static pthread_t
spawn_late(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, late, NULL) != 0)
        abort();
    return t;
}

int
main(int argc, char **argv)
{
    char buf[64];
    int st = -1;
    pid_t pid;

    if (argc < 2 || pipe(pipefd) != 0)
        return 2;
    printf("waiting\n");
    fflush(stdout);
    for (int i = 0; i < 120000 && access(argv[1], F_OK) != 0; i++)
        usleep(1000);
    spawn_late();
    for (int fd = 3; fd < 65536; fd++)
        if (fd != pipefd[0] && fd != pipefd[1])
            close(fd);
    if ((pid = fork()) == 0)
        _exit(7);
    waitpid(pid, &st, 0);
    printf("done %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    return 0;
}
