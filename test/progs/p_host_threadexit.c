/* p_host_threadexit: threads that live ~1-5 ms each, made and joined in a
 * loop (four at a time) for ~2.5 s, so that our timer and queued signals
 * keep landing on threads as they exit.  Checks each thread's result.
 */
#include <pthread.h>

#include "p_host.h"

static void *
brief(void *arg)
{
    unsigned long x = (unsigned long)(intptr_t)arg;
    char *p = malloc(64 + x % 512);

    if (!p)
        row_fail("malloc");
    for (volatile int i = 0; i < 20000 + (int)(x % 7) * 10000; i++)
        x = x * 31 + 7;
    free(p);
    return (void *)(intptr_t)((intptr_t)arg + 1);
}

int
main(void)
{
    double end = row_now() + 2.5;
    long made = 0;

    while (row_now() < end) {
        pthread_t t[4];
        void *r;
        for (int i = 0; i < 4; i++)
            if (pthread_create(&t[i], NULL, brief, (void *)(intptr_t)(made + i)))
                row_fail("pthread_create");
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], &r);
            if ((intptr_t)r != made + i + 1)
                row_fail("thread result");
        }
        made += 4;
    }
    printf("figure: threadexit: %ld threads\n", made);
    row_done();
}
