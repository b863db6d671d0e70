/*
 * folded.c: the model as collapsed ("folded") stacks, the text that flame
 * graph tools, speedscope and inferno read: one line per distinct stack,
 * function names from the outermost frame to the leaf joined by ';', a space,
 * and the stack's value for one sample type.  Stacks that differ only in their
 * labels (thread) are one line.  Lines come in flame-graph order (flame_int.h).
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame_int.h"
#include "render.h"

/* A name as a frame of a folded line: ';' separates frames and a line ends at '\n'. */
static void
put_frame(pe_sink_t *o, const char *name)
{
    const char *s = name;
    size_t run;

    while (*s) {
        run = strcspn(s, ";\n\r");
        pe_sink_write(o, s, run);
        s += run;
        if (*s) {
            pe_sink_write(o, "_", 1);
            s++;
        }
    }
}

int
pe_prof_write_folded(pe_prof_t *p, pe_sink_t *out, int value_index)
{
    pe_bufsink_t b;
    pe_sink_t *o = &b.sink;
    pe_prof_sample_t s, next;
    pe_flame_t f;
    uint32_t i, j;
    int64_t v;
    int d, err;

    err = pe_flame_init(&f, p, value_index, 0);
    if (err)
        return err;
    if (pe_bufsink_open(&b, out, PE_FLAME_BUF)) {
        pe_flame_free(&f);
        return -ENOMEM;
    }
    for (i = 0; i < f.n && !o->err; i = j) {
        pe_flame_sample(&f, i, &s);
        v = s.values[f.vi];
        /* Equal stacks are adjacent: sum them into one line. */
        for (j = i + 1; j < f.n; j++) {
            pe_flame_sample(&f, j, &next);
            if (next.nframes != s.nframes)
                break;
            for (d = 0; d < s.nframes &&
                        pe_flame_same(pe_flame_name(&f, &s, d), pe_flame_name(&f, &next, d));
                 d++)
                ;
            if (d != s.nframes)
                break;
            v += next.values[f.vi];
        }
        if (v == 0)
            continue;
        if (s.nframes == 0)
            pe_sink_put(o, "[unknown]");
        for (d = 0; d < s.nframes; d++) {
            if (d)
                pe_sink_write(o, ";", 1);
            put_frame(o, pe_flame_name(&f, &s, d));
        }
        pe_sink_printf(o, " %" PRId64 "\n", v);
    }
    err = pe_bufsink_close(&b);
    pe_flame_free(&f);
    return err;
}
