/* p_host_seccomp: a seccomp filter that answers EPERM to timer_create and
 * rt_tgsigqueueinfo.  First on the main thread only (prctl): the program's
 * own timer_create fails as it asked, ours (made on our threads) go on.
 * Then synchronised to every thread (seccomp TSYNC): our CPU, wall and
 * stack endpoints answer 503 saying seccomp; heap still 200.  The program
 * works with threads throughout; nothing dies.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "p_host.h"
#include "p_host_seccomp.h"

static volatile int stop;

static void *
work(void *arg)
{
    while (!stop) {
        free(malloc(200));
        row_spin(0.005);
    }
    return NULL;
}

static void
expect(const char *addr, const char *path, int want, const char *word)
{
    char body[512];
    int st = row_http(addr, path, body, sizeof(body), NULL);

    /* 409: another session of another rate runs (the harness's); 503 for too many */
    if (st != want && !(want == 200 && (st == 409 || st == 503)))
        row_fail("%s: status %d, want %d: %.200s", path, st, want, body);
    if (word && !strstr(body, word))
        row_fail("%s: %d without '%s': %.200s", path, st, word, body);
}

int
main(void)
{
    pthread_t t[2];
    timer_t id;
    struct sigevent sev = {.sigev_notify = SIGEV_NONE};
    char addr[64];

    if (row_addr_of(getpid(), addr, sizeof(addr), 10) < 0)
        row_fail("no port file");
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    row_spin(0.5);
    if (row_seccomp(SECCOMP_RET_ERRNO | EPERM, 0))
        row_fail("prctl seccomp: %s", strerror(errno));
    if (timer_create(CLOCK_MONOTONIC, &sev, &id) == 0 || errno != EPERM)
        row_fail("the program's own timer_create was not refused");
    expect(addr, "/profile?duration=0.3&delay=0.001", 200, NULL);
    row_spin(0.5);
    if (row_seccomp(SECCOMP_RET_ERRNO | EPERM, 1))
        row_fail("seccomp TSYNC: %s", strerror(errno));
    expect(addr, "/profile?duration=0.3&delay=0.001", 503, "seccomp");
    expect(addr, "/profile_wall?duration=0.3&delay=0.001", 503, "seccomp");
    expect(addr, "/debug/pprof/goroutine?debug=1", 503, "seccomp");
    expect(addr, "/debug/pprof/heap?debug=1", 200, NULL);
    row_spin(1);
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    row_done();
}
