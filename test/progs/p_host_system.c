/*
 * p_host_system (host-matrix row): system() and popen()/pclose() in a loop
 * for PE_ROW_SECONDS (default 3): "exit 7" (status 7), popen "echo hi" read
 * back, popen for writing into "cat >/dev/null"; and, when the program
 * started with SIGHUP ignored (nohup), a shell started by system() and by
 * popen() that sends itself SIGHUP must survive it (issue 15, point 5).
 */
#include <sys/wait.h>

#include "host_row.h"
#include "host_row_hup.h"

int
main(void)
{
    double secs = getenv("PE_ROW_SECONDS") ? atof(getenv("PE_ROW_SECONDS")) : 3;
    double t0 = row_now();
    int hup = row_hup_ignored(), st;
    long n = 0;

    while (row_now() - t0 < secs) {
        char line[64];
        FILE *f;

        st = system("exit 7");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
            row_fail("system(exit 7): status 0x%x", st);
        if (!(f = popen("echo hi", "r")))
            row_fail("popen r: %s", strerror(errno));
        if (!fgets(line, sizeof(line), f) || strcmp(line, "hi\n"))
            row_fail("popen read: not what echo wrote");
        if ((st = pclose(f)) != 0)
            row_fail("pclose r: status 0x%x", st);
        if (!(f = popen("cat >/dev/null", "w")))
            row_fail("popen w: %s", strerror(errno));
        fputs("data\n", f);
        if ((st = pclose(f)) != 0)
            row_fail("pclose w: status 0x%x", st);
        if (hup) {
            st = system(ROW_HUP_CMD);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                row_fail("system: the child died of the SIGHUP it ignored (status 0x%x)", st);
            if (!(f = popen(ROW_HUP_CMD, "r")))
                row_fail("popen hup: %s", strerror(errno));
            if ((st = pclose(f)) != 0)
                row_fail("popen: the child died of the SIGHUP it ignored (status 0x%x)", st);
        }
        n++;
    }
    fprintf(stderr, "system rounds: %ld (SIGHUP %s)\n", n, hup ? "ignored: checked" : "default");
    row_done();
    return 0;
}
