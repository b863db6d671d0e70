/* p_threads: 8 threads each compute a known sum with malloc churn; output is deterministic. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *
work(void *arg)
{
    long id = (long)arg, sum = 0, i;

    for (i = 0; i < 200000; i++) {
        long *p = malloc(sizeof(long) * (1 + (size_t)(i % 32)));
        p[0] = i * id;
        sum += p[0] % 7;
        free(p);
    }
    return (void *)sum;
}

int
main(void)
{
    pthread_t t[8];
    void *r;
    long i;

    for (i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (i = 0; i < 8; i++) {
        pthread_join(t[i], &r);
        printf("thread %ld sum %ld\n", i, (long)r);
    }
    return 0;
}
