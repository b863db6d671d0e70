/*
 * kind.h: a profile kind, the small table of functions that says what differs
 * between CPU time, wall-clock time and lock contention (async-profiler's
 * Engine is the shape: a name, units, start, stop, thread start).  Everything
 * else (windows, the ring, the collector, the signal; the record windows and
 * baselines of the HTTP side) is shared and reads the row.
 *
 * Two families share the row type:
 *   sampled  windows over the sampler's signal (sampler.c): start/stop run
 *            when the kind's first window opens and its last closes, the
 *            samples arrive through the ring tagged with `ring_flag`, and
 *            `labels` and `comment` finish the profile; open with
 *            pe_sampler_open_kind.
 *   recorded a table kept all along (contention/mutex.c), read by snapshots: `snapshot`
 *            and `delta` give the records of a window, `build` the profile and
 *            `text` Go's debug=1 text.
 * Adding a kind: a file defining `const pe_kind_t pe_kind_<name>` (declared
 * below) and its route rows in http/routes.c, which name the row and one of
 * the family's handlers; the routes take the kind's `unavailable` (docs/
 * DESIGN.md, "Adding a profile kind").  Unused members are NULL/0.
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

typedef struct pe_kind_s {
    const char *name;         /* "cpu": the measure's type, file stem, and the period type */
    pe_prof_vt_t types[2];    /* sample types and units: a count, then the measure */
    pe_prof_vt_t period_type; /* pprof's period type */
    const char *default_type; /* pprof's default_sample_type, or NULL (the last) */
    unsigned flags;           /* PE_KIND_F_* */
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
    /* What the HTTP side calls it (NULL/0: http/h_profile.c's defaults). */
    const char *title;  /* in messages: "CPU", "wall-clock" */
    const char *stem;   /* a profile's file name stem: "profile", "wall" */
    int64_t min_period; /* the least period (delay=) a request may ask, ns */

    /* -- recorded kinds (a table kept all along) -- */
    size_t rec_size;                      /* one record */
    int (*snapshot)(void **recs, int *n); /* malloc'd copy, in delta's order */
    void (*delta)(void *now, int n, const void *before, int nbefore); /* now -= before */
    /* The records a view shows (kept in place) as a profile covering
       duration_ns up to now; NULL on ENOMEM. */
    pe_prof_t *(*build)(void *recs, int n, int64_t duration_ns);
    /* Go's debug=1 text of the records; 0 or the sink's error. */
    int (*text)(pe_sink_t *out, void *recs, int n);
} pe_kind_t;

/* The kinds (cpu_session.c: cpu, wall.c: wall; contention/mutex_profile.c:
   mutex, block). */
extern const pe_kind_t pe_kind_cpu, pe_kind_wall, pe_kind_mutex, pe_kind_block;
/* All of them, for what checks every kind (test/unit/u_kinds.c: each has its routes). */
#define PE_KINDS &pe_kind_cpu, &pe_kind_wall, &pe_kind_mutex, &pe_kind_block

#endif /* PE_KIND_H */
