/*
 * kind.h: a profile kind, the small table of functions that says what differs
 * between CPU time, wall-clock time and lock contention (async-profiler's
 * Engine is the shape: a name, units, start, stop, thread start).  Everything
 * else (windows, the ring, the collector, the signal; the record windows and
 * baselines of the HTTP side) is shared and reads the row.
 *
 * Three families share the row type:
 *   sampled  windows over the sampler's signal (sampler.c): start/stop run
 *            when the kind's first window opens and its last closes, the
 *            samples arrive through the ring tagged with `ring_flag`, and
 *            `labels` and `comment` finish the profile; open with
 *            pe_sampler_open_kind.
 *   recorded a table kept all along (contention/mutex.c, heap/heap.c), read
 *            by snapshots: `snapshot` and `delta` give the records of a
 *            window, `build` the profile and `text` Go's debug=1 text.
 *   session  a recording the kind runs itself, one at a time (heap/allocs.c):
 *            `session_start`, `session_state`, `session_stop`.
 * Adding a kind: a file defining `const pe_kind_t pe_kind_<name>` (declared
 * below) and its route rows in http/routes.c, which name the row and one of
 * the family's handlers; the routes take the kind's `unavailable`, and
 * sample_index its types (docs/DESIGN.md, "Adding a profile kind").  Unused
 * members are NULL/0.
 *
 * Signal-safe: no (start, stop and the builders run on HTTP threads under the
 * sampler's lock; thread_start/thread_exit on the thread itself, no lock).
 */
#ifndef PE_KIND_H
#define PE_KIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

/* What a closing sampled window tells its kind's comment (counts since it opened). */
typedef struct pe_kind_close_s {
    int64_t period;              /* the session's period, ns */
    uint64_t samples, weight;    /* signals kept, and their weight with overruns */
    uint64_t ticks, quiet, sigs; /* wall: ticks, /proc captures, signals sent */
    uint64_t unsignalled;        /* wall: not signalled, the wait would fail (sigsafe.h) */
    uint64_t why[4];             /* wall: signals by reason (asked, running, woke, cannot) */
} pe_kind_close_t;

/* pe_kind_t.flags */
#define PE_KIND_F_CAPTURE 1u /* takes capture=auto|signal (wall) */
#define PE_KIND_F_ONCPU 2u   /* measures CPU time: a near-idle root hints at busy members */
#define PE_KIND_F_AGES 4u    /* takes min_age, max_age, since (the heap's views, heap/views.c) */

/* The most sample types a kind has (the heap's four). */
#define PE_KIND_MAX_TYPES 4

typedef struct pe_kind_s {
    const char *name; /* "cpu": the measure's type, file stem, and the period type */
    /* Sample types and units: a count, then the measure (sampled kinds: just
       those two); ntypes of them, 0 meaning 2. */
    pe_prof_vt_t types[PE_KIND_MAX_TYPES];
    int ntypes;
    pe_prof_vt_t period_type;         /* pprof's period type */
    const char *default_type;         /* pprof's default_sample_type, or NULL (the last) */
    unsigned flags;                   /* PE_KIND_F_* */
    const char *(*unavailable)(void); /* why it cannot run now, or NULL */

    /* -- sampled kinds (sampler.c) -- */
    int64_t *period;                            /* the running session's period (ns) */
    uint32_t ring_flag;                         /* PE_RING_F_* its samples carry (0: none) */
    void (*start)(int64_t period, int capture); /* the kind's first window opens */
    void (*stop)(void);                         /* its last closes while others stay open */
    void (*thread_start)(pid_t tid);            /* an application thread starts (or NULL) */
    void (*thread_exit)(pid_t tid);             /* and exits (or NULL) */
    /* Labels of one sample after thread and thread_name, from the ring slot's
       flags, into l[0..1]; how many (or NULL: none). */
    int (*labels)(uint32_t flags, pe_prof_label_t *l);
    void (*comment)(pe_prof_t *p, const pe_kind_close_t *c); /* its comment lines */
    /* What the HTTP side calls it (NULL/0: the name; 1 ms). */
    const char *title;  /* in messages: "CPU", "wall-clock", "allocation recording" */
    const char *stem;   /* a profile's file name stem: "profile", "wall" */
    int64_t min_period; /* sampled: the least period (delay=) a request may ask, ns */

    /* -- recorded kinds (a table kept all along) -- */
    size_t rec_size;                      /* one record */
    int (*snapshot)(void **recs, int *n); /* malloc'd copy, in delta's order */
    void (*delta)(void *now, int n, const void *before, int nbefore); /* now -= before */
    /* The records a view shows (kept in place) as a profile covering
       duration_ns up to now; NULL on ENOMEM. */
    pe_prof_t *(*build)(void *recs, int n, int64_t duration_ns);
    /* Go's debug=1 text of the records; 0 or the sink's error. */
    int (*text)(pe_sink_t *out, void *recs, int n);

    /* -- session kinds (a recording of its own, one at a time) -- */
    /* Start it with probability `rate` in (0, 1] (the request's sample_rate),
       open-ended (the _start route) or timed: 0, -EBUSY (one runs) or -errno. */
    int (*session_start)(double rate, int open_ended);
    int (*session_state)(void); /* what runs: 0 nothing, 1 a timed one, 2 an open-ended one */
    /* Stop the one started so and build its profile covering duration_ns:
       0 with *p, -ENOENT (no such recording runs) or -ENOMEM (stopped). */
    int (*session_stop)(int open_ended, int64_t duration_ns, pe_prof_t **p);
} pe_kind_t;

/* How many sample types k has. */
#define PE_KIND_NTYPES(k) ((k)->ntypes ? (k)->ntypes : 2)

/* The kinds (cpu_session.c: cpu, wall.c: wall; contention/mutex_profile.c:
   mutex, block; heap/heap_kinds.c: heap, allocs, allocs_profile). */
extern const pe_kind_t pe_kind_cpu, pe_kind_wall, pe_kind_mutex, pe_kind_block;
extern const pe_kind_t pe_kind_heap, pe_kind_allocs, pe_kind_allocs_profile;
/* All of them, for what checks every kind (test/unit/u_kinds.c: each has its routes). */
#define PE_KINDS                                                                                   \
    &pe_kind_cpu, &pe_kind_wall, &pe_kind_mutex, &pe_kind_block, &pe_kind_heap, &pe_kind_allocs,   \
        &pe_kind_allocs_profile

#endif /* PE_KIND_H */
