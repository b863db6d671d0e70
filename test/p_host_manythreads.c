/* p_host_manythreads: many threads alive at once (1,000; 10,000 with
 * PE_HOST_LONG=1), each waking every 50 ms to do a little CPU work and an
 * allocation, for ~2.5 s while profiled: per-thread timers and the signal
 * queue reach their limits (fewer samples), never a failure of the program.
 * Small stacks (64 KiB) so that 10,000 fit.  Checks every thread's count.
 */
#include <pthread.h>

#include "p_host.h"

static volatile int go = 1;

static void *
work(void *arg)
{
    long n = 0;

    while (__atomic_load_n(&go, __ATOMIC_RELAXED)) {
        char *p = malloc(100);
        if (!p)
            row_fail("malloc");
        p[0] = 1;
        free(p);
        for (volatile int i = 0; i < 20000; i++)
            ;
        n++;
        row_sleep(0.05);
    }
    *(long *)arg = n;
    return NULL;
}

int
main(void)
{
    int nt = row_long() ? 10000 : 1000, made = 0;
    pthread_t *t = calloc((size_t)nt, sizeof(*t));
    long *cnt = calloc((size_t)nt, sizeof(*cnt));
    pthread_attr_t a;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    for (int i = 0; i < nt; i++) {
        int e = pthread_create(&t[i], &a, work, &cnt[i]);
        if (e)
            row_fail("pthread_create %d: %s", i, strerror(e));
        made++;
    }
    row_sleep(2.5);
    __atomic_store_n(&go, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < made; i++) {
        pthread_join(t[i], NULL);
        if (cnt[i] < 1)
            row_fail("thread %d never ran", i);
    }
    printf("figure: manythreads: %d threads\n", made);
    row_done();
}
