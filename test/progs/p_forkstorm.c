/*
 * p_forkstorm: fork+exec storm.  argv[1] times (default 2000), alternately:
 * fork and exec /bin/true (status 0 expected), or fork and _exit(k % 7)
 * without exec (status k % 7 expected); every child is waited for and its
 * status checked.  Prints "forks=N ok" and exits 0, or the mismatch and 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000, k, bad = 0;

    for (k = 0; k < n; k++) {
        int st, want = k & 1 ? (int)(k % 7) : 0;
        pid_t pid = fork();

        if (pid < 0) {
            perror("p_forkstorm: fork");
            return 1;
        }
        if (pid == 0) {
            if (k & 1) {
                free(malloc(100)); /* the child allocates before leaving */
                _exit((int)(k % 7));
            }
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != want) {
            fprintf(stderr, "p_forkstorm: child %ld: status %#x, want exit %d\n", k, st, want);
            bad++;
        }
    }
    if (bad) {
        printf("forks=%ld bad=%ld\n", n, bad);
        return 1;
    }
    printf("forks=%ld ok\n", n);
    return 0;
}
