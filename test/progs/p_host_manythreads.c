/* p_host_manythreads: many threads alive at once (1,000; 10,000 with
 * PE_HOST_LONG=1), each doing a little CPU work and an allocation, then
 * waiting on a condition variable (woken every 0.5 s to do it again) for
 * ~2.5 s while profiled: per-thread timers and the signal queue reach their
 * limits (fewer samples), never a failure of the program.  Small stacks
 * (64 KiB) so that 10,000 fit.  Checks every thread's count.
 */
#include <pthread.h>

#include "p_host.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go = 1, round_no;

static void *
work(void *arg)
{
    long n = 0;
    int seen = -1;

    for (;;) {
        char *p = malloc(100);
        if (!p)
            row_fail("malloc");
        p[0] = 1;
        free(p);
        for (volatile int i = 0; i < 2000; i++)
            ;
        n++;
        pthread_mutex_lock(&mu);
        if (seen < 0)
            seen = round_no;
        while (go && round_no == seen)
            pthread_cond_wait(&cv, &mu);
        seen = round_no;
        if (!go) {
            pthread_mutex_unlock(&mu);
            break;
        }
        pthread_mutex_unlock(&mu);
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
    for (int r = 0; r < 5; r++) {
        row_sleep(0.5);
        pthread_mutex_lock(&mu);
        round_no++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    go = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < made; i++) {
        pthread_join(t[i], NULL);
        if (cnt[i] < 1)
            row_fail("thread %d never ran", i);
    }
    printf("figure: manythreads: %d threads\n", made);
    row_done();
}
