/*
 * gotext.c: Go's legacy text profiles (runtime/pprof's debug=1 and debug=2
 * forms): the grouped form of a count profile (goroutine, threadcreate), one
 * block per thread (debug=2), the heap and contention records with their
 * symbolized stacks, and gperftools' MAPPED_LIBRARIES trailer.  debug=2 is
 * Go's per-goroutine form, one block per thread (its tid as the goroutine's).  What the
 * records mean is the caller's; this file only lays them out as Go's readers
 * (go tool pprof's legacy parsers, scrapers) expect.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../preload/proc.h"
#include "../profile/profile.h"
#include "gotext.h"

/* ---- stacks ---------------------------------------------------------------------- */

/*
 * A resolved sample's frames as Go's debug=1 writes them: "#\tPC\tname+off\t
 * FILE:LINE", with the mapping's path where no line is known.  An inlined
 * call is a line of its own with the same PC and no offset, as Go writes its
 * inlined frames.
 */
static void
put_frames(pe_sink_t *out, const pe_prof_sample_t *sm)
{
    for (int f = 0; f < sm->nframes; f++) {
        const pe_prof_frame_t *fr = sm->frames[f];

        pe_sink_printf(out, "#\t%#llx\t%s", (unsigned long long)fr->addr, fr->name);
        if (fr->offset && !fr->inlined)
            pe_sink_printf(out, "+%#llx", (unsigned long long)fr->offset);
        if (fr->src && fr->line)
            pe_sink_printf(out, "\t%s:%u\n", fr->src, fr->line);
        else
            pe_sink_printf(out, "\t%s\n", fr->src ? fr->src : fr->file ? fr->file : "");
    }
}

/*
 * A resolved sample's frames as Go's debug=2 writes a goroutine's: the
 * function on one line, then "\tFILE:LINE +0xOFF" (the offset from the
 * function's start; none for an inlined call, as Go writes those), or
 * "\t[object] +0xOFF" where no line is known.
 */
static void
put_frames_go2(pe_sink_t *out, const pe_prof_sample_t *sm)
{
    for (int f = 0; f < sm->nframes; f++) {
        const pe_prof_frame_t *fr = sm->frames[f];
        const char *obj = fr->file ? strrchr(fr->file, '/') : NULL;

        pe_sink_printf(out, "%s(...)\n", fr->name);
        if (fr->src && fr->line)
            pe_sink_printf(out, "\t%s:%u", fr->src, fr->line);
        else if (fr->file && fr->file[0] == '[') /* "[jit]" and the like */
            pe_sink_printf(out, "\t%s", fr->file);
        else
            pe_sink_printf(out, "\t[%s]", obj ? obj + 1 : fr->file ? fr->file : "?");
        if (!fr->inlined)
            pe_sink_printf(out, " +%#llx", (unsigned long long)fr->offset);
        pe_sink_put(out, "\n");
    }
}

/* " @ PC PC...": the stack's return addresses, as Go writes them. */
static void
put_pcs(pe_sink_t *out, const uintptr_t *pcs, int n)
{
    pe_sink_put(out, " @");
    for (int f = 0; f < n; f++)
        pe_sink_printf(out, " %#" PRIxPTR, pcs[f]);
    pe_sink_put(out, "\n");
}

/*
 * The records' stacks as one profile, sample i being record i's (a label
 * keeps equal stacks apart), so that the whole text is resolved at once.
 * NULL on ENOMEM: the caller writes addresses only.
 */
static pe_prof_t *
records_prof(int n, const uint32_t *stacks, size_t stride, pe_prof_stack_fn stack)
{
    pe_prof_vt_t vt = {"count", "count"};
    uintptr_t pcs[PE_MAX_FRAMES];
    pe_prof_label_t l = {.key = "record"};
    pe_prof_t *p = pe_prof_new(&vt, 1, NULL, 0);
    int i, k;

    for (i = 0; p && i < n; i++) {
        k = stack(*(const uint32_t *)((const char *)stacks + (size_t)i * stride), pcs,
                  PE_MAX_FRAMES);
        l.num = i;
        if (pe_prof_add(p, pcs, k > 0 ? k : 0, 0, NULL, &l, 1) < 0) {
            pe_prof_free(p);
            p = NULL;
        }
    }
    if (p && (pe_prof_resolve(p, 0) < 0 || pe_prof_nsamples(p) != n)) {
        pe_prof_free(p);
        p = NULL;
    }
    return p;
}

/* Record i's stack: its addresses, then its frames when resolved. */
static void
put_record(pe_sink_t *out, pe_prof_t *p, int i, uint32_t id, pe_prof_stack_fn stack)
{
    uintptr_t pcs[PE_MAX_FRAMES];
    pe_prof_sample_t sm;
    int k = stack(id, pcs, PE_MAX_FRAMES);

    put_pcs(out, pcs, k > 0 ? k : 0);
    if (p) {
        pe_prof_sample(p, i, &sm);
        put_frames(out, &sm);
    }
    pe_sink_put(out, "\n");
}

static const pe_prof_label_t *
label(const pe_prof_sample_t *sm, const char *key)
{
    for (int i = 0; i < sm->nlabels; i++)
        if (!strcmp(sm->labels[i].key, key))
            return &sm->labels[i];
    return NULL;
}

/* ---- count profiles (debug=1 and debug=2) --------------------------------------------- */

/* Largest first, then in sample order. */
static int
by_count(const void *a, const void *b, void *arg)
{
    pe_prof_t *p = arg;
    pe_prof_sample_t x, y;

    pe_prof_sample(p, *(const int *)a, &x);
    pe_prof_sample(p, *(const int *)b, &y);
    if (x.values[0] != y.values[0])
        return x.values[0] > y.values[0] ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

int
pe_prof_write_go_grouped(pe_prof_t *p, pe_sink_t *out, const char *title)
{
    int n, *idx, rc;
    int64_t total = 0;

    if ((rc = pe_prof_resolve(p, 0)) < 0)
        return rc;
    n = pe_prof_nsamples(p);
    idx = malloc((n ? (size_t)n : 1) * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        pe_prof_sample_t sm;
        pe_prof_sample(p, i, &sm);
        total += sm.values[0];
        idx[i] = i;
    }
    qsort_r(idx, (size_t)n, sizeof(*idx), by_count, p);
    pe_sink_printf(out, "%s profile: total %lld\n", title, (long long)total);
    for (int i = 0; i < n; i++) {
        pe_prof_sample_t sm;
        const pe_prof_label_t *cl;
        pe_prof_sample(p, idx[i], &sm);
        pe_sink_printf(out, "%lld @", (long long)sm.values[0]);
        for (int f = 0; f < sm.nframes; f++)
            if (sm.frames[f]->addr) /* pseudo-frames ("[no answer]") have none */
                pe_sink_printf(out, " %#llx", (unsigned long long)sm.frames[f]->addr);
        pe_sink_put(out, "\n");
        if ((cl = label(&sm, "capture")) && cl->str)
            pe_sink_printf(out, "# labels: {\"capture\":\"%s\"}\n", cl->str);
        put_frames(out, &sm);
        pe_sink_put(out, "\n");
    }
    free(idx);
    return out->err;
}

int
pe_prof_write_go_threads(pe_prof_t *p, pe_sink_t *out)
{
    int rc;

    if ((rc = pe_prof_resolve(p, 0)) < 0)
        return rc;
    for (int i = 0; i < pe_prof_nsamples(p); i++) {
        pe_prof_sample_t sm;
        const pe_prof_label_t *tid, *name, *state, *l;

        pe_prof_sample(p, i, &sm);
        tid = label(&sm, "thread");
        name = label(&sm, "thread_name");
        state = label(&sm, "state");
        /* Go's goroutine header, the thread id for the goroutine's */
        pe_sink_printf(
            out, "goroutine %lld [%s, thread \"%s\"]:\n", tid ? (long long)tid->num : -1LL,
            state && state->str ? state->str : "unknown", name && name->str ? name->str : "?");
        if ((l = label(&sm, "unsampled")) && l->str)
            pe_sink_printf(out, "# unsampled: %s\n", l->str);
        if ((l = label(&sm, "no_answer"))) {
            pe_sink_printf(out, "# no answer within the bound (%s)\n\n", l->str ? l->str : "?");
            continue;
        }
        if ((l = label(&sm, "capture_note")) && l->str)
            pe_sink_printf(out, "# capture: %s\n", l->str);
        put_frames_go2(out, &sm);
        pe_sink_put(out, "\n");
    }
    return out->err;
}

/* ---- heap and contention records (debug=1) ------------------------------------------ */

int
pe_prof_write_go_heap(pe_sink_t *out, const pe_prof_go_heap_t *v, int n, int64_t heap_rate,
                      pe_prof_stack_fn stack)
{
    int64_t t_in = 0, t_inb = 0, t_a = 0, t_ab = 0;
    pe_prof_t *p;

    for (int i = 0; i < n; i++) {
        t_in += v[i].inuse_n;
        t_inb += v[i].inuse_b;
        t_a += v[i].alloc_n;
        t_ab += v[i].alloc_b;
    }
    pe_sink_printf(out,
                   "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64
                   "] @ heap/%" PRId64 "\n",
                   t_in, t_inb, t_a, t_ab, heap_rate);
    p = n > 0 ? records_prof(n, &v[0].stack, sizeof(v[0]), stack) : NULL;
    for (int i = 0; i < n && !out->err; i++) {
        pe_sink_printf(out, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "]", v[i].inuse_n,
                       v[i].inuse_b, v[i].alloc_n, v[i].alloc_b);
        put_record(out, p, i, v[i].stack, stack);
    }
    pe_prof_free(p);
    return out->err;
}

int
pe_prof_write_go_contention(pe_sink_t *out, const char *name, int64_t period,
                            const pe_prof_go_contention_t *v, int n, pe_prof_stack_fn stack)
{
    pe_prof_t *p;

    pe_sink_printf(out, "--- %s:\ncycles/second=1000000000\nsampling period=%" PRId64 "\n", name,
                   period);
    p = n > 0 ? records_prof(n, &v[0].stack, sizeof(v[0]), stack) : NULL;
    for (int i = 0; i < n && !out->err; i++) {
        pe_sink_printf(out, "%" PRIu64 " %" PRIu64, v[i].delay_ns, v[i].count);
        put_record(out, p, i, v[i].stack, stack);
    }
    pe_prof_free(p);
    return out->err;
}

int
pe_prof_write_go_maps(pe_sink_t *out)
{
    pe_proc_maps_t it;
    const char *line;

    if (pe_proc_maps_open(&it) < 0)
        return out->err;
    pe_sink_put(out, "\nMAPPED_LIBRARIES:\n");
    while (!out->err && (line = pe_proc_maps_line(&it)) != NULL) {
        pe_sink_put(out, line);
        pe_sink_put(out, "\n");
    }
    pe_proc_maps_close(&it);
    return out->err;
}
