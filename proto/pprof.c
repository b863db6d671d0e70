/*
 * pprof.c: the model as a gzipped perftools.profiles.Profile.  nanopb streams
 * it: the five big repeated fields are FT_CALLBACKs that encode one element
 * at a time from a stack struct, into a buffering sink (sink.h), into
 * gzip.c, into the caller's sink.  Nothing the size of the profile is ever built.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pb_encode.h>

#include "../preload/log.h"
#include "../profile/model.h"
#include "pprof.h"
#include "profile.pb.h"

/* Lines one Location carries (profile.options: Location.line max_count). */
#define PE_PROF_PB_LINES 32

/* nanopb writes a varint at a time; batch those before each deflate call. */
#define PPROF_OBUF 8192
/* Like Go's runtime/pprof: speed matters more than the last 20% of size. */
#define PPROF_GZIP_LEVEL 1

/* ---- output stream --------------------------------------------------------- */

/* nanopb's stream into a pe_bufsink_t; false stops the encoding at the first error. */
static bool
out_write(pb_ostream_t *stream, const pb_byte_t *buf, size_t count)
{
    return pe_sink_write(stream->state, buf, count) == 0;
}

/* ---- repeated fields ---------------------------------------------------------- */

/*
 * Each callback below writes whole fields (tag + submessage).  The Profile is
 * the top-level message, so nanopb calls each exactly once; the submessages
 * are plain structs, so pb_encode_submessage's sizing pass is deterministic.
 */

/* Every fixed array of profile.options holds what the model can put in it: a
   count past max_count is a stack overrun in the encoder, not an error. */
#define PB_CAP(type, field) (sizeof(((type *)0)->field) / sizeof(((type *)0)->field[0]))
_Static_assert(PB_CAP(perftools_profiles_Sample, location_id) >= PE_MAX_FRAMES,
               "profile.options: Sample.location_id max_count");
_Static_assert(PB_CAP(perftools_profiles_Sample, value) >= PE_PROF_MAX_TYPES,
               "profile.options: Sample.value max_count");
_Static_assert(PB_CAP(perftools_profiles_Sample, label) >= PE_PROF_MAX_LABELS,
               "profile.options: Sample.label max_count");
_Static_assert(PB_CAP(perftools_profiles_Location, line) >= PE_PROF_PB_LINES,
               "profile.options: Location.line max_count");
_Static_assert(PB_CAP(perftools_profiles_Profile, sample_type) >= PE_PROF_MAX_TYPES,
               "profile.options: Profile.sample_type max_count");
_Static_assert(PB_CAP(perftools_profiles_Profile, comment) >= PE_PROF_MAX_COMMENTS,
               "profile.options: Profile.comment max_count");

static bool
enc_samples(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const pe_prof_t *p = *arg;
    perftools_profiles_Sample msg;
    const pe_prof_smp_t *s;
    const pe_prof_label_t *l;
    uint32_t i;
    int j;

    for (i = 0; i < p->nsamples; i++) {
        s = p->samples[i];
        memset(&msg, 0, sizeof(msg));
        msg.location_id_count = s->nframes;
        for (j = 0; j < s->nframes; j++)
            msg.location_id[j] = pe_prof_loc_of(s->frames[j])->id;
        msg.value_count = (pb_size_t)p->ntypes;
        for (j = 0; j < p->ntypes; j++)
            msg.value[j] = s->values[j];
        msg.label_count = s->nlabels;
        for (j = 0; j < s->nlabels; j++) {
            l = &s->labels[j];
            msg.label[j].key = pe_prof_stridx(l->key);
            if (l->str) {
                msg.label[j].str = pe_prof_stridx(l->str);
            } else {
                msg.label[j].num = l->num;
                msg.label[j].num_unit = l->unit ? pe_prof_stridx(l->unit) : 0;
            }
        }
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, perftools_profiles_Sample_fields, &msg))
            return false;
    }
    return true;
}

static bool
enc_mappings(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const pe_prof_t *p = *arg;
    perftools_profiles_Mapping msg;
    const pe_prof_map_t *m;
    uint32_t id, i;

    /* Ids were given in emission order (main executable first) by prepare(). */
    for (id = 1;; id++) {
        for (i = 0; i < p->nmaps && p->maps[i].id != id; i++)
            ;
        if (i == p->nmaps)
            return true;
        m = &p->maps[i];
        memset(&msg, 0, sizeof(msg));
        msg.id = m->id;
        msg.memory_start = m->start;
        msg.memory_limit = m->limit;
        msg.file_offset = m->offset;
        msg.filename = pe_prof_stridx(m->path);
        msg.build_id = pe_prof_stridx(m->build_id);
        /* Every address of it went through our symbolizer, which is also what
           /debug/pprof/symbol answers from: an address without a name has none
           to be found (a stripped object; pprof shows it as [object]).  Claim
           the names, or pprof comes back for them, after a program that has
           exited is gone (issue 38). */
        msg.has_functions = !p->no_names && m->nlocs > 0;
        /* Lines read in process: pprof must not read the binary again (it
           would, for the few addresses without a name, and lose the rest). */
        if (!p->no_names && m->nlined > 0) {
            msg.has_functions = true;
            msg.has_filenames = true;
            msg.has_line_numbers = true;
            msg.has_inline_frames = m->inlines;
        }
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, perftools_profiles_Mapping_fields, &msg))
            return false;
    }
}

static bool
enc_locations(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const pe_prof_t *p = *arg;
    perftools_profiles_Location msg;
    const pe_prof_loc_t *loc, *in;
    uint32_t i, k;

    for (i = 0; i < p->nlocs; i++) {
        loc = p->locs[i];
        memset(&msg, 0, sizeof(msg));
        msg.id = loc->id;
        msg.mapping_id = loc->map ? p->maps[loc->map - 1].id : 0;
        msg.address = loc->frame.addr;
        if (loc->func && p->funcs[loc->func - 1].id) {
            /* Innermost first: the inlined calls, then the function itself. */
            for (k = 0; k < loc->ninl && k + 1 < PE_PROF_PB_LINES; k++) {
                in = loc->inl[k];
                msg.line[msg.line_count].function_id = p->funcs[in->func - 1].id;
                msg.line[msg.line_count++].line = in->frame.line;
            }
            msg.line[msg.line_count].function_id = p->funcs[loc->func - 1].id;
            msg.line[msg.line_count++].line =
                loc->py ? (int64_t)loc->line : (int64_t)loc->frame.line;
        }
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, perftools_profiles_Location_fields, &msg))
            return false;
    }
    return true;
}

static bool
enc_functions(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const pe_prof_t *p = *arg;
    perftools_profiles_Function msg;
    uint32_t i;

    for (i = 0; i < p->nfuncs; i++) {
        if (!p->funcs[i].id)
            continue;
        memset(&msg, 0, sizeof(msg));
        msg.id = p->funcs[i].id;
        /* The readable name as our views show it, the mangled one as the
           system name (pprof's proto); a name nobody mangled is both.  The
           short form by default, as pprof's own demangler gives it (no
           parameters, no template arguments), so that go tool pprof shows the
           same names whether it demangles or not; names=full keeps them. */
        msg.name = pe_prof_stridx(pe_prof_func_shown(p, &p->funcs[i]));
        msg.system_name = pe_prof_stridx(p->funcs[i].name);
        if (p->funcs[i].file)
            msg.filename = pe_prof_stridx(p->funcs[i].file);
        msg.start_line = p->funcs[i].start_line;
        /* CPython functions: a system name of their own, so pprof takes `name`
           as already demangled instead of cutting "<module>" or "<lambda>" to
           "" as a C++ template. */
        if (p->funcs[i].sysname)
            msg.system_name = pe_prof_stridx(p->funcs[i].sysname);
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, perftools_profiles_Function_fields, &msg))
            return false;
    }
    return true;
}

static bool
enc_strings(pb_ostream_t *stream, const pb_field_t *field, void *const *arg)
{
    const pe_prof_t *p = *arg;
    uint32_t i;

    for (i = 0; i < p->nstrs; i++)
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_string(stream, (const pb_byte_t *)p->strs[i], strlen(p->strs[i])))
            return false;
    return true;
}

/* ---- preparation ----------------------------------------------------------------- */

/*
 * Give ids to what will be emitted.  Must run after resolve and before
 * pb_encode: string_table (tag 6) is written before the fields that follow it,
 * and every string is already interned by now.
 */
static void
prepare(pe_prof_t *p)
{
    uint32_t i, mid = 0, fid = 0;
    pe_prof_loc_t *loc;

    for (i = 0; i < p->nmaps; i++)
        p->maps[i].id = 0;
    for (i = 0; i < p->nfuncs; i++)
        p->funcs[i].id = 0;
    /* mapping[0] is the main binary, by pprof's convention. */
    for (i = 0; i < p->nmaps; i++)
        if (p->maps[i].is_main && p->maps[i].current) {
            p->maps[i].id = ++mid;
            break;
        }
    for (i = 0; i < p->nlocs; i++) {
        loc = p->locs[i];
        if (loc->map && !p->maps[loc->map - 1].id)
            p->maps[loc->map - 1].id = ++mid;
        /* With no_names only pseudo-frames keep a function; pprof names the rest. */
        if (loc->func && (loc->pseudo || loc->py || !p->no_names)) {
            p->funcs[loc->func - 1].id = 1;
            for (uint32_t k = 0; k < loc->ninl; k++)
                p->funcs[loc->inl[k]->func - 1].id = 1;
        }
    }
    /* Function ids in table order, so enc_functions emits them ascending. */
    for (i = 0; i < p->nfuncs; i++)
        if (p->funcs[i].id)
            p->funcs[i].id = ++fid;
}

/* ---- encoder ------------------------------------------------------------------------ */

int
pe_prof_write_pprof(pe_prof_t *p, pe_sink_t *out)
{
    perftools_profiles_Profile msg = perftools_profiles_Profile_init_zero;
    pe_bufsink_t b;
    pb_ostream_t stream;
    pe_gzip_t gz;
    int err, cerr, i;

    err = pe_prof_resolve(p, 0);
    if (err)
        return err;
    prepare(p);

    msg.sample_type_count = (pb_size_t)p->ntypes;
    for (i = 0; i < p->ntypes; i++) {
        msg.sample_type[i].type = pe_prof_stridx(p->types[i].type);
        msg.sample_type[i].unit = pe_prof_stridx(p->types[i].unit);
    }
    msg.sample.funcs.encode = enc_samples;
    msg.sample.arg = p;
    msg.mapping.funcs.encode = enc_mappings;
    msg.mapping.arg = p;
    msg.location.funcs.encode = enc_locations;
    msg.location.arg = p;
    msg.function.funcs.encode = enc_functions;
    msg.function.arg = p;
    msg.string_table.funcs.encode = enc_strings;
    msg.string_table.arg = p;
    msg.time_nanos = p->time_nanos;
    msg.duration_nanos = p->duration_nanos;
    if (p->period_type.type) {
        msg.has_period_type = true;
        msg.period_type.type = pe_prof_stridx(p->period_type.type);
        msg.period_type.unit = pe_prof_stridx(p->period_type.unit);
    }
    msg.period = p->period;
    msg.comment_count = (pb_size_t)p->ncomments;
    for (i = 0; i < p->ncomments; i++)
        msg.comment[i] = pe_prof_stridx(p->comments[i]);
    msg.default_sample_type = p->default_type ? pe_prof_stridx(p->default_type) : 0;

    err = pe_gzip_open(&gz, out, PPROF_GZIP_LEVEL);
    if (err)
        return err;
    err = pe_bufsink_open(&b, &gz.sink, PPROF_OBUF);
    if (err)
        goto err_gzip;
    stream = (pb_ostream_t){.callback = out_write, .state = &b.sink, .max_size = SIZE_MAX};
    if (!pb_encode(&stream, perftools_profiles_Profile_fields, &msg)) {
        err = b.sink.err;
        if (!err) {
            pe_log_warn("pprof: encoding failed: %s", PB_GET_ERROR(&stream));
            err = -EIO;
        }
    }
    cerr = pe_bufsink_close(&b);
    if (!err)
        err = cerr;
err_gzip:
    cerr = pe_gzip_close(&gz);
    if (!err)
        err = cerr;
    return err;
}
