/*
 * render.h: the model (profile.h) as people and flame-graph tools read it:
 * the text report (text.c), folded stacks (folded.c) and the SVG flame graph
 * (svg.c).  The other views of render/ have their own headers: the heap
 * snapshot (heapsnapshot.h), Go's legacy text (gotext.h), the timeline chart
 * (timeline.h), the trace JSON (trace_json.h).  Each encoder resolves the
 * profile itself and returns 0 or a negative errno (the sink's first error).
 *
 * Signal-safe: no.
 */
#ifndef PE_RENDER_H
#define PE_RENDER_H

#include <stdint.h>

#include "../profile/profile.h"
#include "../sink/sink.h"

/* Julia Profile.print-like text report (the `pprof=false` / `format=text` form). */
typedef struct pe_text_opts_s {
    int flat;         /* 0: tree, 1: flat */
    int64_t mincount; /* hide lines below this count */
    int maxdepth;     /* tree depth limit, 0 = unlimited */
    int by_thread;    /* groupby=thread: one section per `thread` label */
    int value_index;  /* which sample type to report; -1: the default */
} pe_text_opts_t;

int pe_prof_write_text(pe_prof_t *p, pe_sink_t *out, const pe_text_opts_t *opts);

/*
 * Collapsed stacks for flame graph tools and speedscope (folded.c): one line
 * per distinct stack of function names, outermost first, joined by ';', then a
 * space and the summed value of sample type `value_index` (-1: the default);
 * zero values are left out.  Returns 0, -EINVAL (no such type), -ENOMEM or the
 * sink's first error.
 */
int pe_prof_write_folded(pe_prof_t *p, pe_sink_t *out, int value_index);

/*
 * A self-contained interactive flame graph (svg.c): root at the bottom, widths
 * by sample type `value_index` (-1: the default; negative values are not
 * drawn), tooltips, click-to-zoom and search in a small embedded script, no
 * network fetches.  `title` (copied, escaped; NULL: "Flame graph") heads it.
 * Streamed.  Returns as pe_prof_write_folded.
 */
int pe_prof_write_svg(pe_prof_t *p, pe_sink_t *out, int value_index, const char *title);

#endif /* PE_RENDER_H */
