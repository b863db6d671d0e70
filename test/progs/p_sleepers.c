/* p_sleepers: argv[1] threads (default 2000) asleep in pthread_cond_wait, on
 * 64 KiB stacks, for argv[2] seconds (default 30); prints "ready N" once they
 * all run.  A wall profile cannot signal them all in a few ticks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go = 1, running;

static void *
sleeper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    running++;
    while (go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000, made = 0, i;
    double secs = argc > 2 ? atof(argv[2]) : 30;
    pthread_attr_t a;
    pthread_t *t = calloc((size_t)n, sizeof(*t));

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    for (i = 0; t && i < n; i++)
        made += pthread_create(&t[i], &a, sleeper, NULL) == 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        i = running;
        pthread_mutex_unlock(&mu);
        if (i >= made)
            break;
        usleep(10000);
    }
    printf("ready %d\n", made);
    fflush(stdout);
    usleep((useconds_t)(secs * 1e6));
    pthread_mutex_lock(&mu);
    go = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (i = 0; t && i < n; i++)
        if (t[i])
            pthread_join(t[i], NULL);
    free(t);
    return 0;
}
