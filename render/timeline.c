/*
 * timeline.c: the memory-over-time chart (timeline.h): the SVG (byte axis,
 * one line per series, the threads strip below, hover columns linking to
 * heap?since=), the HTML page around it, and the JSON.
 *
 * Signal-safe: no.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timeline.h"

/* Plot geometry (SVG user units). */
#define W 1000.0
#define H 360.0
#define ML 80.0 /* left margin: the byte axis */
#define MR 40.0
#define MT 20.0
#define TH 70.0 /* the threads strip */
#define GAP 50.0
#define MB 40.0
#define COLS 720 /* hover/link columns at most */

typedef struct series_s {
    const char *key, *label, *color;
    uint64_t (*get)(const pe_prof_tl_point_t *e);
} series_t;

static uint64_t
g_rss(const pe_prof_tl_point_t *e)
{
    return e->rss;
}
static uint64_t
g_heap(const pe_prof_tl_point_t *e)
{
    return e->heap;
}
static uint64_t
g_inuse(const pe_prof_tl_point_t *e)
{
    return e->mi_inuse;
}
static uint64_t
g_free(const pe_prof_tl_point_t *e)
{
    return e->mi_free;
}
static uint64_t
g_mmap(const pe_prof_tl_point_t *e)
{
    return e->mi_mmap;
}

static const series_t series[] = {
    {"rss", "RSS (/proc/self/statm)", "#d62728", g_rss},
    {"heap", "sampled live heap (estimate)", "#1f77b4", g_heap},
    {"arena_inuse", "glibc arenas: in use", "#2ca02c", g_inuse},
    {"arena_free", "glibc arenas: free", "#ff7f0e", g_free},
    {"mmapped", "glibc: mmapped blocks", "#9467bd", g_mmap},
};
#define NSERIES ((int)(sizeof(series) / sizeof(series[0])))

static void
hms(int64_t t_ms, char *buf, size_t len)
{
    time_t s = (time_t)(t_ms / 1000);
    struct tm tm;

    gmtime_r(&s, &tm);
    strftime(buf, len, "%H:%M:%S", &tm);
}

/* Bytes in a readable unit. */
static void
human(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;

    while ((b < 0 ? -b : b) >= 1024 && i < 4) {
        b /= 1024;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* No libm (pe_round_i64 says why): the two it would give. */
static double
max_d(double a, double b)
{
    return a > b ? a : b;
}

static double
ceil_d(double x)
{
    double t = (double)(int64_t)x;

    return t < x ? t + 1 : t;
}

/* A round step (1, 2, 5 x 10^k of the unit) giving about `want` ticks up to max. */
static double
nice_step(double max, int want, double unit)
{
    double raw = max / unit / want, p = 1, m;

    if (!(raw > 0))
        raw = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    m = raw / p;

    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p * unit;
}

/* ---- JSON ------------------------------------------------------------------------ */

void
pe_prof_timeline_json(pe_sink_t *s, const pe_prof_tl_t *t)
{
    const pe_prof_tl_point_t *v = t->v;

    pe_sink_printf(s,
                   "{\"interval_s\":1,\"checkpoint_s\":%g,\"checkpoints\":%" PRIu64
                   ",\"history_bytes\":%" PRIu64 ",\"heap_rate\":%" PRId64
                   ",\"peak\":{\"t_ms\":%" PRId64 ",\"heap\":%" PRIu64 "},\"points\":[",
                   t->checkpoint_s, t->checkpoints, t->history_bytes, t->heap_rate, t->peak_ms,
                   t->peak_bytes);
    for (int i = 0; i < t->n && !s->err; i++)
        pe_sink_printf(s,
                       "%s\n{\"t_ms\":%" PRId64 ",\"rss\":%" PRIu64 ",\"heap\":%" PRIu64
                       ",\"arena_inuse\":%" PRIu64 ",\"arena_free\":%" PRIu64
                       ",\"mmapped\":%" PRIu64 ",\"threads\":%u,\"arena_known\":%s}",
                       i ? "," : "", v[i].t_ms, v[i].rss, v[i].heap, v[i].mi_inuse, v[i].mi_free,
                       v[i].mi_mmap, v[i].threads, v[i].have_arena ? "true" : "false");
    pe_sink_put(s, "\n]}\n");
}

/* ---- SVG --------------------------------------------------------------------------- */

/* The chart's scales: the time span, the byte maximum, the threads strip's. */
typedef struct plot_s {
    double t0, span, pw; /* first second, seconds shown (ms), plot width */
    double ymax;         /* bytes at the top of the plot */
    double tmax, ty;     /* threads at the top of the strip, the strip's top */
} plot_t;

static double
x_of(const plot_t *p, double t)
{
    return ML + (t - p->t0) / p->span * p->pw;
}

static double
y_of(const plot_t *p, double b)
{
    return MT + H - b / p->ymax * H;
}

static double
yt_of(const plot_t *p, double k)
{
    return p->ty + TH - k / p->tmax * TH;
}

/* The svg element, and the byte and time axes with their gridlines. */
static void
svg_axes(pe_sink_t *s, const plot_t *p)
{
    double unit, step, ty = p->ty;
    char a[32], tb[16];

    pe_sink_printf(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart\" viewBox=\"0 0 %.0f %.0f\" "
        "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
        W, ty + TH + MB, W, ty + TH + MB);
    /* byte axis: gridlines at round steps of a unit that suits the maximum */
    unit = p->ymax >= 1 << 30   ? 1 << 30
           : p->ymax >= 1 << 20 ? 1 << 20
           : p->ymax >= 1 << 10 ? 1 << 10
                                : 1;
    step = nice_step(p->ymax, 6, unit);
    for (double y = 0; y <= p->ymax; y += step) {
        human(y, a, sizeof(a));
        pe_sink_printf(s,
                       "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                       ML, W - MR, y_of(p, y), y_of(p, y), ML - 6, y_of(p, y) + 4, a);
    }
    pe_sink_printf(s,
                   "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
                   "text-anchor=\"middle\">bytes</text>\n",
                   MT + H / 2, MT + H / 2);
    /* time axis (UTC) under both plots */
    for (int i = 0; i <= 6; i++) {
        double t = p->t0 + p->span * i / 6;
        hms((int64_t)t, tb, sizeof(tb));
        pe_sink_printf(s,
                       "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                       x_of(p, t), x_of(p, t), MT, ty + TH, x_of(p, t), ty + TH + 16, tb);
    }
    pe_sink_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (UTC)</text>\n",
                   ML + p->pw / 2, ty + TH + 34);
}

/* A circle on the peak of the sampled heap, labelled, linking to heap_peak. */
static void
svg_peak(pe_sink_t *s, const plot_t *p, int64_t peak_ms, uint64_t peak_b)
{
    double px = x_of(p, (double)peak_ms), lw;
    char a[32], tb[16];
    int left;

    human((double)peak_b, a, sizeof(a));
    hms(peak_ms, tb, sizeof(tb));
    /* The label's width at 12px bold sans (about 7.5 units a character):
       on the left of the circle when the right would leave the chart. */
    lw = 7.5 * (double)(strlen("peak  at ") + strlen(a) + strlen(tb));
    left = px + 8 + lw > W - 4;
    pe_sink_printf(s,
                   "<a href=\"heap_peak\"><g id=\"peak\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                   "fill=\"none\" stroke=\"#000\" stroke-width=\"2\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\" text-anchor=\"%s\" "
                   "stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">peak %s at %s</text>"
                   "<title>peak of the sampled heap: %s at %s UTC (click: /heap_peak)</title>"
                   "</g></a>\n",
                   px, y_of(p, (double)peak_b), left ? px - 8 : px + 8,
                   max_d(y_of(p, (double)peak_b) - 8, MT + 12), left ? "end" : "start", a, tb, a,
                   tb);
}

/* The threads strip under the byte plot (ours included). */
static void
svg_threads(pe_sink_t *s, const plot_t *p, const pe_prof_tl_point_t *v, int n)
{
    double ty = p->ty;

    pe_sink_printf(s,
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>"
                   "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
                   "text-anchor=\"middle\">threads</text>" /* ours included */
                   "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                   "<polyline id=\"s-threads\" fill=\"none\" stroke=\"#555\" points=\"",
                   ML - 6, ty + 4, p->tmax, ML - 6, ty + TH + 4, ty + TH / 2, ty + TH / 2, ML,
                   W - MR, ty + TH, ty + TH);
    for (int i = 0; i < n && !s->err; i++)
        pe_sink_printf(s, "%.1f,%.1f ", x_of(p, (double)v[i].t_ms), yt_of(p, v[i].threads));
    pe_sink_put(s, "\"/>\n");
}

/* Hover and links: one transparent column per group of seconds (COLS at most). */
static void
svg_columns(pe_sink_t *s, const plot_t *p, const pe_prof_tl_point_t *v, int n, int64_t now)
{
    char a[32], b[32], c[32], d[32], e[32], f[32], tb[16];
    int cols = n < COLS ? n : COLS;

    pe_sink_put(s, "<g id=\"cols\" fill=\"#000\" fill-opacity=\"0\">\n");
    for (int c0 = 0; c0 < cols && !s->err; c0++) {
        int i = (int)((int64_t)(c0 + 1) * n / cols) - 1; /* the column's last second */
        int lo = (int)((int64_t)c0 * n / cols);
        double x0 = lo ? (x_of(p, (double)v[lo - 1].t_ms) + x_of(p, (double)v[lo].t_ms)) / 2 : ML;
        double x1 =
            i + 1 < n ? (x_of(p, (double)v[i].t_ms) + x_of(p, (double)v[i + 1].t_ms)) / 2 : W - MR;
        double ago = (double)(now - v[i].t_ms) / 1000;

        hms(v[i].t_ms, tb, sizeof(tb));
        human((double)v[i].rss, a, sizeof(a));
        human((double)v[i].heap, b, sizeof(b));
        human((double)v[i].mi_inuse, c, sizeof(c));
        human((double)v[i].mi_free, d, sizeof(d));
        human((double)v[i].mi_mmap, e, sizeof(e));
        human((double)v[i].rss - (double)v[i].heap, f, sizeof(f));
        pe_sink_printf(s,
                       "<a href=\"debug/pprof/heap?since=%.0f\"><rect class=\"pt\" x=\"%.1f\" "
                       "y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" data-t=\"%" PRId64
                       "\" data-rss=\"%" PRIu64 "\" data-heap=\"%" PRIu64 "\" data-threads=\"%u\">"
                       "<title>%s UTC (%.0f s ago)\nRSS %s\nsampled heap %s (RSS - heap: %s)\n"
                       "arenas in use %s, free %s; mmapped %s\nthreads %u\n"
                       "click: what changed since then (heap?since=%.0f)</title></rect></a>\n",
                       ago, x0, MT, max_d(x1 - x0, 0.5), p->ty + TH - MT, v[i].t_ms, v[i].rss,
                       v[i].heap, v[i].threads, tb, ago, a, b, f, c, d, e, v[i].threads, ago);
    }
    pe_sink_put(s, "</g>\n");
}

static void
write_svg(pe_sink_t *s, const pe_prof_tl_point_t *v, int n, int64_t peak_ms, uint64_t peak_b,
          int64_t now)
{
    double t0 = (double)v[0].t_ms, t1 = (double)v[n - 1].t_ms;
    plot_t p = {t0, t1 > t0 ? t1 - t0 : 1000, W - ML - MR, 1, 1, MT + H + GAP};
    int arena = v[n - 1].have_arena; /* the glibc series are drawn when the last second has them */

    for (int i = 0; i < n; i++) {
        for (int k = 0; k < NSERIES; k++)
            p.ymax = max_d(p.ymax, (double)series[k].get(&v[i]));
        p.tmax = max_d(p.tmax, v[i].threads);
    }
    p.ymax *= 1.08;
    p.tmax = ceil_d(p.tmax * 1.2);
    svg_axes(s, &p);
    for (int k = 0; k < NSERIES; k++) { /* the series */
        if (k >= 2 && !arena)
            continue;
        pe_sink_printf(
            s, "<polyline id=\"s-%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
            series[k].key, series[k].color);
        for (int i = 0; i < n && !s->err; i++)
            pe_sink_printf(s, "%.1f,%.1f ", x_of(&p, (double)v[i].t_ms),
                           y_of(&p, (double)series[k].get(&v[i])));
        pe_sink_put(s, "\"/>\n");
    }
    if (peak_ms >= v[0].t_ms && peak_ms <= v[n - 1].t_ms + 1000)
        svg_peak(s, &p, peak_ms, peak_b);
    svg_threads(s, &p, v, n);
    svg_columns(s, &p, v, n, now);
    for (int k = 0, x = (int)ML + 10; k < NSERIES; k++) { /* legend */
        if (k >= 2 && !arena)
            continue;
        pe_sink_printf(s,
                       "<rect x=\"%d\" y=\"%.0f\" width=\"14\" height=\"3\" fill=\"%s\"/>"
                       "<text x=\"%d\" y=\"%.0f\">%s</text>\n",
                       x, MT + 6, series[k].color, x + 18, MT + 11, series[k].label);
        x += 28 + (int)strlen(series[k].label) * 6;
    }
    pe_sink_put(s, "</svg>\n");
}

/* The program's name, safe inside HTML text (markup characters become '_'). */
static void
safe_name(const char *program, char *buf, size_t len)
{
    snprintf(buf, len, "%s", program);
    for (char *c = buf; *c; c++)
        if (strchr("<>&\"'", *c))
            *c = '_';
}

void
pe_prof_timeline_svg(pe_sink_t *s, const pe_prof_tl_t *t)
{
    write_svg(s, t->v, t->n, t->peak_ms, t->peak_bytes, t->now_ms);
}

void
pe_prof_timeline_html(pe_sink_t *s, const pe_prof_tl_t *t)
{
    const pe_prof_tl_point_t *v = t->v;
    char a[32], b[32], tb[16], name[64];
    int n = t->n;

    safe_name(t->program, name, sizeof(name));
    pe_sink_printf(s,
                   "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memory over time: "
                   "%s (pid %d)</title>\n<style>body{font-family:sans-serif;margin:1em}"
                   "#cols rect:hover{fill-opacity:.08}p,li{max-width:60em}</style></head><body>\n"
                   "<h2>Memory over time: %s (pid %d)</h2>\n",
                   name, t->pid, name, t->pid);
    hms(v[n - 1].t_ms, tb, sizeof(tb));
    human((double)v[n - 1].rss, a, sizeof(a));
    human((double)v[n - 1].heap, b, sizeof(b));
    pe_sink_printf(s,
                   "<p id=\"now\">At %s UTC: RSS <b>%s</b>, sampled live heap <b>%s</b>, "
                   "<span id=\"threads\">%u threads",
                   tb, a, b, v[n - 1].threads);
    /* a single-threaded program shows a dozen: say which are ours */
    if (t->ours >= 0)
        pe_sink_printf(s, " (%d of them the profiler's)", t->ours);
    pe_sink_printf(s,
                   "</span>. Last %d s, one point a second; hover for values, click a moment "
                   "for what changed since then (<code>heap?since=</code>).</p>\n",
                   n);
    write_svg(s, v, n, t->peak_ms, t->peak_bytes, t->now_ms);
    pe_sink_printf(s,
                   "<ul><li><a href=\"heap_peak\">/heap_peak</a>: the heap per stack at its "
                   "peak</li><li><a href=\"debug/pprof/heap?min_age=300\">heap?min_age=300</a>: "
                   "live blocks older than five minutes (leak candidates)</li>"
                   "<li><a href=\"heap_timeline?format=json\">format=json</a></li></ul>\n"
                   "<p>RSS above the sampled heap is memory malloc holds but the program does not "
                   "(fragmentation, free arena space) or memory that is not malloc's (stacks, "
                   "mmap, code). The heap estimate is sampled (mean %" PRId64
                   " bytes between samples).</p></body></html>\n",
                   t->heap_rate);
}
