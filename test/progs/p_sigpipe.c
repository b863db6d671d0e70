/* p_sigpipe: expects SIGPIPE's default disposition and dies of SIGPIPE writing to a closed pipe. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(void)
{
    struct sigaction sa;
    int fds[2];

    usleep(300000); /* let the library's server start its threads */
    sigaction(SIGPIPE, NULL, &sa);
    printf("SIGPIPE disposition %s\n", sa.sa_handler == SIG_DFL ? "default" : "changed");
    fflush(stdout);
    if (pipe(fds) < 0)
        return 2;
    close(fds[0]);
    write(fds[1], "x", 1);
    printf("still alive after EPIPE\n");
    return 1;
}
