/*
 * host_row_hup.h: the spawn rows' check that a signal the program ignores
 * stays ignored in its children (issue 15, point 5): when SIGHUP was ignored
 * at start (nohup), a child shell that sends itself SIGHUP must live on.
 */
#ifndef HOST_ROW_HUP_H
#define HOST_ROW_HUP_H

#include <signal.h>

/* 1 when the program started with SIGHUP ignored (as the program sees it). */
static __attribute__((unused)) int
row_hup_ignored(void)
{
    struct sigaction sa;

    return sigaction(SIGHUP, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
           sa.sa_handler == SIG_IGN;
}

/* A shell command that exits 0 only when it survives its own SIGHUP. */
#define ROW_HUP_CMD "kill -HUP $$; exit 0"

#endif /* HOST_ROW_HUP_H */
