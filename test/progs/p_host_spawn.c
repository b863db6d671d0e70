/*
 * p_host_spawn (host-matrix row): posix_spawn and posix_spawnp in a loop for
 * PE_ROW_SECONDS (default 3): /bin/true, "sh -c 'exit 3'" through PATH, a
 * path that does not exist (ENOENT from posix_spawn), and, when the program
 * started with SIGHUP ignored (nohup), a shell that sends itself SIGHUP and
 * must survive it (glibc's spawn child bypasses our exec wrappers).  Every
 * status is checked.
 */
#include <spawn.h>
#include <sys/wait.h>

#include "host_row.h"
#include "host_row_hup.h"

extern char **environ;

static int
run(int usepath, char *const argv[], int want_status)
{
    pid_t pid;
    int rc, status;

    rc = usepath ? posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ)
                 : posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
    if (want_status < 0)
        return rc == ENOENT ? 0 : (row_fail("spawn of a missing file: %d", rc), 1);
    if (rc != 0)
        row_fail("posix_spawn %s: %s", argv[0], strerror(rc));
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            row_fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != want_status)
        row_fail("%s %s: status 0x%x, wanted exit %d", argv[0], argv[1] ? argv[1] : "", status,
                 want_status);
    return 0;
}

int
main(void)
{
    double secs = getenv("PE_ROW_SECONDS") ? atof(getenv("PE_ROW_SECONDS")) : 3;
    double t0 = row_now();
    int hup = row_hup_ignored();
    long n = 0;
    char *tru[] = {"/bin/true", NULL};
    char *sh3[] = {"sh", "-c", "exit 3", NULL};
    char *missing[] = {"/nonexistent/pe-true", NULL};
    char *shhup[] = {"/bin/sh", "-c", ROW_HUP_CMD, NULL};

    while (row_now() - t0 < secs) {
        run(0, tru, 0);
        run(1, sh3, 3);
        run(0, missing, -1);
        if (hup)
            run(0, shhup, 0);
        n++;
    }
    fprintf(stderr, "spawn rounds: %ld (SIGHUP %s)\n", n, hup ? "ignored: checked" : "default");
    row_done();
    return 0;
}
