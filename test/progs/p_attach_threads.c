/*
 * p_attach_threads: argv[1] threads (default 1000, 64 KiB stacks), each in
 * attach_worker waiting on a condition variable that is never signalled;
 * the main thread prints "ready" and waits in read on its stdin, and exits
 * 0 when it closes.  test/e2e/e2e_attach_cpu.sh attaches and looks for every
 * thread in goroutine?debug=2.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started;

__attribute__((noinline)) static void *
attach_worker(void *arg)
{
    pthread_mutex_lock(&mu);
    started++;
    for (;;)
        pthread_cond_wait(&cv, &mu);
    return arg;
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    pthread_attr_t at;
    pthread_t t;
    char buf[64];

    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 << 10);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t, &at, attach_worker, NULL) != 0) {
            fprintf(stderr, "pthread_create failed at %d\n", i);
            return 1;
        }
    for (;;) {
        pthread_mutex_lock(&mu);
        int k = started;
        pthread_mutex_unlock(&mu);
        if (k == n)
            break;
        usleep(1000);
    }
    printf("ready\n");
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    return 0;
}
