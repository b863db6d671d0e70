/*
 * timeline.h: the memory-over-time chart (/heap_timeline): the points of
 * heap/history.c's one-second ring as a self-contained HTML page with an
 * inline SVG chart (no script: hover values are SVG <title>s, each time
 * column links to heap?since= for that moment), as the SVG alone, or as JSON
 * for scripts.  The encoder of the one timeline; the points are the heap
 * module's (heap.h names this type pe_heap_tl_t), the handler only reads
 * parameters, calls, and answers.
 *
 * Signal-safe: no.
 */
#ifndef PE_TIMELINE_H
#define PE_TIMELINE_H

#include <stdint.h>

#include "../sink/sink.h"

/* One second of the timeline; bytes. */
typedef struct pe_prof_tl_point_s {
    int64_t t_ms;                        /* CLOCK_REALTIME */
    uint64_t rss;                        /* /proc/self/statm resident pages */
    uint64_t heap;                       /* sampled live-heap estimate */
    uint64_t mi_inuse, mi_free, mi_mmap; /* mallinfo2: uordblks, fordblks, hblkhd */
    uint32_t threads;                    /* the process's, ours included */
    uint32_t have_arena;                 /* mallinfo2 was found */
} pe_prof_tl_point_t;

/* A chart: the points (oldest first, n >= 1) and what it says beside them. */
typedef struct pe_prof_tl_s {
    const pe_prof_tl_point_t *v;
    int n;
    int64_t peak_ms;        /* when the sampled live heap peaked (CLOCK_REALTIME), 0: never */
    uint64_t peak_bytes;    /* its size then */
    int64_t now_ms;         /* CLOCK_REALTIME */
    int64_t heap_rate;      /* mean bytes between heap samples */
    double checkpoint_s;    /* PROFEP_HEAP_CHECKPOINT */
    uint64_t checkpoints;   /* kept now */
    uint64_t history_bytes; /* what the history holds */
    const char *program;
    int pid;
    int ours; /* of the threads now, how many are the library's; -1: unknown */
} pe_prof_tl_t;

/* The chart as JSON / the SVG alone / an HTML page around it.  sink->err after. */
void pe_prof_timeline_json(pe_sink_t *s, const pe_prof_tl_t *t);
void pe_prof_timeline_svg(pe_sink_t *s, const pe_prof_tl_t *t);
void pe_prof_timeline_html(pe_sink_t *s, const pe_prof_tl_t *t);

#endif /* PE_TIMELINE_H */
