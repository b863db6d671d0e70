/*
 * baseline.c: the memory behind godeltaprof's paths (/debug/pprof/delta_heap,
 * delta_mutex, delta_block): per path, a copy of the cumulative records the
 * previous call saw, so that the next call can answer the change since then.
 * One baseline per path, replaced at every call: memory is bounded by the
 * record tables it copies (heap/ and sampler/mutex.c bound those).
 *
 * Signal-safe: no (HTTP worker threads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/clock.h"
#include "http_int.h"

int
pe_http_baseline_swap(pe_http_baseline_t *b, const void *now, int n, size_t size, void **prev,
                      int *nprev, int64_t *prev_ns)
{
    void *copy = NULL;
    int64_t taken;

    *prev = NULL;
    *nprev = 0;
    *prev_ns = 0;
    if (n > 0) {
        copy = malloc((size_t)n * size);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, now, (size_t)n * size);
    }
    taken = pe_clock_ns(CLOCK_REALTIME);
    /* Two scrapers of one path split the stream between them: each sees the
       change since whichever call came last, never a change counted twice. */
    pthread_mutex_lock(&b->lock);
    *prev = b->recs;
    *nprev = b->n;
    *prev_ns = b->taken_ns;
    b->recs = copy;
    b->n = n;
    b->taken_ns = taken;
    pthread_mutex_unlock(&b->lock);
    return 0;
}
