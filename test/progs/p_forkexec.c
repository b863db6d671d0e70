/* p_forkexec: fork a child that allocates and exits, fork+exec a shell, report statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(void)
{
    int status, i;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        for (i = 0; i < 100000; i++)
            free(malloc((size_t)(i % 4096) + 1));
        _exit(11);
    }
    waitpid(pid, &status, 0);
    printf("fork child exit %d\n", WEXITSTATUS(status));
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c",
              "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; echo exec child $i; exit 12",
              (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    printf("exec child exit %d\n", WEXITSTATUS(status));
    fflush(stdout);
    /* the other variadic forms: execlp searches PATH, execle passes its own environment */
    pid = fork();
    if (pid == 0) {
        execlp("echo", "echo", "execlp", "args", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    pid = fork();
    if (pid == 0) {
        char *env[] = {"PE_EXECLE=own-env", NULL};
        execle("/bin/sh", "sh", "-c", "echo execle $PE_EXECLE", (char *)NULL, env);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return 0;
}
