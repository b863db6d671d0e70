/*
 * svg.c: the model as a self-contained interactive flame graph (SVG with its
 * own small script; nothing is fetched).  The root ("all") is the bottom row
 * and callees stack upwards; a frame's width is its share of the total of one
 * sample type; siblings are in name order.  Each frame is a <g class="f"> with
 * a <title> tooltip (the whole name, "[inlined]" for an inlined call, the
 * source file and, by line, the line; value, percentage), a <rect> and a
 * label cut to fit: the short name, or "File:Line; Function" with
 * granularity=lines.  Inlined calls have dashed outlines.  A button switches
 * between one box per function and one per line (the page's URL again, with
 * granularity= changed).
 * The script adds click-to-zoom (the frame fills the width, its ancestors stay
 * as a dimmed bar, the root or "Reset Zoom" or Escape undoes it), search (a
 * prompt for a regular expression, or Ctrl-F or '/': matches turn magenta and
 * the bottom line gives the share of the total they cover), and state from the
 * URL fragment (#s=REGEX&z=NAME) so a link can open zoomed or searched.
 *
 * Layout is one sweep over the stacks in flame-graph order (flame.h): a frame
 * opens where a stack first differs from the previous one and is written out
 * when a later stack leaves it, so the document streams out as it is made and
 * only the sort index and one open frame per depth are held.
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "proto_int.h"

/* Geometry, in SVG user units (pixels at 100%). */
#define SVG_WIDTH 1200
#define SVG_PAD 10                       /* left and right margin */
#define SVG_XW (SVG_WIDTH - 2 * SVG_PAD) /* width of the root frame */
#define SVG_TOP 62                       /* y of the deepest possible row */
#define SVG_ROW 16                       /* row pitch; boxes are SVG_ROW - 1 high */
#define SVG_BOTTOM 40                    /* room for the details line */
#define SVG_CHAR_W 7.3                   /* width of one 12px monospace character */
#define SVG_MIN_W 0.1                    /* narrower frames are not drawn */

typedef struct svg_s {
    pe_sink_t *o;
    const pe_flame_t *f;
    const pe_prof_vt_t *vt;
    int nlevels;  /* rows: the root plus the deepest stack */
    double scale; /* pixels per unit of value */
} svg_t;

/* ---- text ------------------------------------------------------------------------ */

/* Number of characters (code points, '?' for each bad byte) in s. */
static size_t
text_chars(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    int k;

    while (*u) {
        k = pe_prof_xml_char_len(u);
        u += k ? k : 1;
        n++;
    }
    return n;
}

/* A value for people: seconds for nanoseconds, KiB.. for bytes, else "N type". */
static void
human(char *buf, size_t len, int64_t v, const pe_prof_vt_t *vt)
{
    const char *unit = vt->unit ? vt->unit : "", *type = vt->type ? vt->type : "";
    double d = (double)v;

    if (!strcmp(unit, "nanoseconds")) {
        if (d >= 1e9)
            snprintf(buf, len, "%.2f s", d / 1e9);
        else if (d >= 1e6)
            snprintf(buf, len, "%.2f ms", d / 1e6);
        else if (d >= 1e3)
            snprintf(buf, len, "%.2f us", d / 1e3);
        else
            snprintf(buf, len, "%" PRId64 " ns", v);
    } else if (!strcmp(unit, "bytes")) {
        if (d >= 1073741824.0)
            snprintf(buf, len, "%.2f GiB", d / 1073741824.0);
        else if (d >= 1048576.0)
            snprintf(buf, len, "%.2f MiB", d / 1048576.0);
        else if (d >= 1024.0)
            snprintf(buf, len, "%.2f KiB", d / 1024.0);
        else
            snprintf(buf, len, "%" PRId64 " B", v);
    } else {
        snprintf(buf, len, "%" PRId64 " %s", v, strcmp(unit, "count") ? unit : type);
    }
}

/* A warm colour from the name, the same for a function wherever it appears. */
static void
colour(const char *name, int *r, int *g, int *b)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    /* Light enough that black labels stay readable (and OCR-able, see the browser test). */
    *r = 230 + (int)(h % 26);
    *g = 130 + (int)((h >> 8) % 100);
    *b = 40 + (int)((h >> 20) % 60);
}

/* ---- frames ---------------------------------------------------------------------- */

/*
 * The tooltip's words for a frame: the whole name, "[inlined]" for an inlined
 * call, and where: the file and line, or, when the box joins several lines of
 * one function, the file alone.
 */
static void
put_tip(const svg_t *c, const pe_prof_frame_t *fr)
{
    pe_sink_t *o = c->o;

    pe_sink_xml_str(o, fr->full ? fr->full : fr->name, (size_t)-1);
    if (fr->inlined)
        pe_sink_put(o, " [inlined]");
    if (fr->src) {
        pe_sink_put(o, " at ");
        pe_sink_xml_str(o, fr->src, (size_t)-1);
        if (c->f->by_line && fr->line)
            pe_sink_printf(o, ":%u", fr->line);
    }
}

/* One frame: `level` 0 is the root row; start and width are in units of value. */
static void
frame(svg_t *c, int level, const pe_prof_frame_t *fr, int64_t start, int64_t width)
{
    pe_sink_t *o = c->o;
    double x = SVG_PAD + (double)start * c->scale, w = (double)width * c->scale;
    int y = SVG_TOP + (c->nlevels - 1 - level) * SVG_ROW, r, g, b;
    double pct = c->f->total ? 100.0 * (double)width / (double)c->f->total : 0;
    const char *name = fr ? (c->f->by_line ? fr->label : fr->name) : "all";
    size_t fit, len;
    char val[64];

    if (w < SVG_MIN_W && level > 0)
        return;
    if (level == 0) {
        r = 215, g = 215, b = 205;
    } else {
        colour(fr->name, &r, &g, &b);
    }
    human(val, sizeof(val), width, c->vt);
    /* data-n: the label the script fits into the box again after a zoom. */
    pe_sink_put(o, !fr           ? "<g class=\"f root\" data-n=\""
                   : fr->inlined ? "<g class=\"f inl\" data-n=\""
                                 : "<g class=\"f\" data-n=\"");
    pe_sink_xml_str(o, name, (size_t)-1);
    pe_sink_put(o, "\"><title>");
    if (fr)
        put_tip(c, fr);
    else
        pe_sink_xml_str(o, name, (size_t)-1);
    pe_sink_printf(o,
                   " (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                   "rx=\"2\" fill=\"rgb(%d,%d,%d)\"/><text class=\"l\" x=\"%.2f\" y=\"%.1f\">",
                   val, pct, x, y, w, SVG_ROW - 1, r, g, b, x + 3, y + SVG_ROW - 4.5);
    /* The same fitting rule as the script's fit(). */
    fit = w > 6 ? (size_t)((w - 6) / SVG_CHAR_W) : 0;
    if (fit >= 3) {
        len = text_chars(name);
        if (len <= fit) {
            pe_sink_xml_str(o, name, len);
        } else {
            pe_sink_xml_str(o, name, fit - 2);
            pe_sink_put(o, "..");
        }
    }
    pe_sink_put(o, "</text></g>\n");
}

/* The sweep: frames open where stacks part from the previous one, close where they end. */
static int
frames(svg_t *c)
{
    const pe_flame_t *f = c->f;
    const pe_prof_frame_t **open_frame;
    int64_t *open_start, x = 0;
    int nopen = 0, common, d;
    pe_prof_sample_t s;
    uint32_t i;

    open_frame = malloc(((size_t)f->maxdepth + 1) * sizeof(*open_frame));
    open_start = malloc(((size_t)f->maxdepth + 1) * sizeof(*open_start));
    if (!open_frame || !open_start) {
        free(open_frame);
        free(open_start);
        return -ENOMEM;
    }
    for (i = 0; i < f->n && !c->o->err; i++) {
        pe_flame_sample(f, i, &s);
        for (common = 0;
             common < nopen && common < s.nframes &&
             pe_flame_same(f->by_line ? open_frame[common]->label : open_frame[common]->name,
                           pe_flame_name(f, &s, common));
             common++)
            ;
        for (d = nopen - 1; d >= common; d--)
            frame(c, d + 1, open_frame[d], open_start[d], x - open_start[d]);
        for (d = common; d < s.nframes; d++) {
            open_frame[d] = pe_flame_frame(&s, d);
            open_start[d] = x;
        }
        nopen = s.nframes;
        x += s.values[f->vi];
    }
    for (d = nopen - 1; d >= 0; d--)
        frame(c, d + 1, open_frame[d], open_start[d], x - open_start[d]);
    frame(c, 0, NULL, 0, x);
    free(open_frame);
    free(open_start);
    return 0;
}

/* ---- document -------------------------------------------------------------------- */

static const char svg_style[] = "<style>\n"
                                "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
                                "text.l { pointer-events: none; }\n"
                                "#title { font-size: 17px; }\n"
                                ".btn { fill: #1a5fb4; cursor: pointer; }\n"
                                ".btn:hover { text-decoration: underline; }\n"
                                "g.f { cursor: pointer; }\n"
                                "g.f:hover rect { stroke: #000; stroke-width: 0.6; }\n"
                                "g.anc rect { opacity: 0.55; }\n"
                                "g.inl rect { stroke: #7a4a00; stroke-width: 0.6; "
                                "stroke-dasharray: 3 2; }\n"
                                "</style>\n";

/*
 * The script: plain ES5, no libraries.  It reads the geometry back from the
 * rects at load, so the document stays usable (tooltips, labels) without it.
 */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function () {\n"
    "'use strict';\n"
    "var svg = document.documentElement, MATCH = 'rgb(230,0,230)', EPS = 0.01;\n"
    "var X0 = +svg.getAttribute('data-x0'), XW = +svg.getAttribute('data-xw');\n"
    "var CW = +svg.getAttribute('data-cw');\n"
    "var details = document.getElementById('details'), matched = "
    "document.getElementById('matched');\n"
    "var unzoomBtn = document.getElementById('unzoom');\n"
    "var searchBtn = document.getElementById('search');\n"
    "var resetBtn = document.getElementById('resetsearch');\n"
    "var granBtn = document.getElementById('gran');\n"
    "var frames = [], rootFrame = null, term = '';\n"
    "var gs = document.getElementsByClassName('f');\n"
    "for (var i = 0; i < gs.length; i++) {\n"
    "  var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "  var tip = g.getElementsByTagName('title')[0].textContent, cut = tip.lastIndexOf(' (');\n"
    "  var f = { g: g, r: r, l: g.getElementsByTagName('text')[0], tip: tip,\n"
    "    name: g.getAttribute('data-n') || (cut < 0 ? tip : tip.slice(0, cut)),\n"
    "    fill: r.getAttribute('fill'),\n"
    "    x: +r.getAttribute('x'), w: +r.getAttribute('width'), y: +r.getAttribute('y') };\n"
    "  g.setAttribute('data-i', String(i));\n"
    "  if (g.classList.contains('root')) rootFrame = f;\n"
    "  frames.push(f);\n"
    "}\n"
    "function fit(f, w) {\n"
    "  var n = w > 6 ? Math.floor((w - 6) / CW) : 0, s = '';\n"
    "  if (n >= 3) s = f.name.length <= n ? f.name : f.name.slice(0, n - 2) + '..';\n"
    "  f.l.textContent = s;\n"
    "}\n"
    "function place(f, x, w, anc) {\n"
    "  f.r.setAttribute('x', x.toFixed(2));\n"
    "  f.r.setAttribute('width', w.toFixed(2));\n"
    "  f.l.setAttribute('x', (x + 3).toFixed(2));\n"
    "  fit(f, w);\n"
    "  f.g.style.display = '';\n"
    "  if (anc) f.g.classList.add('anc'); else f.g.classList.remove('anc');\n"
    "}\n"
    "function hide(f) { f.g.style.display = 'none'; }\n"
    "function zoom(z) {\n"
    "  if (z === rootFrame) { unzoom(); return; }\n"
    "  var s = XW / z.w;\n"
    "  frames.forEach(function (f) {\n"
    "    if (f.y > z.y) {\n"
    "      /* a shallower row: keep the frames the zoomed one sits on */\n"
    "      if (f.x <= z.x + EPS && f.x + f.w >= z.x + z.w - EPS) place(f, X0, XW, true);\n"
    "      else hide(f);\n"
    "    } else if (f.x >= z.x - EPS && f.x + f.w <= z.x + z.w + EPS) {\n"
    "      place(f, X0 + (f.x - z.x) * s, f.w * s, false);\n"
    "    } else {\n"
    "      hide(f);\n"
    "    }\n"
    "  });\n"
    "  unzoomBtn.style.display = '';\n"
    "  svg.setAttribute('data-zoom', z.name);\n"
    "}\n"
    "function unzoom() {\n"
    "  frames.forEach(function (f) { place(f, f.x, f.w, false); });\n"
    "  unzoomBtn.style.display = 'none';\n"
    "  svg.removeAttribute('data-zoom');\n"
    "}\n"
    "function regex(t) {\n"
    "  try { return new RegExp(t); }\n"
    "  catch (e) { return new RegExp(t.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')); }\n"
    "}\n"
    "function search(t) {\n"
    "  if (!t) { resetSearch(); return; }\n"
    "  var re = regex(t), spans = [], sum = 0, end = -Infinity, n = 0;\n"
    "  frames.forEach(function (f) {\n"
    "    if (f !== rootFrame && re.test(f.name)) {\n"
    "      f.r.setAttribute('fill', MATCH); spans.push([f.x, f.x + f.w]); n++;\n"
    "    } else {\n"
    "      f.r.setAttribute('fill', f.fill);\n"
    "    }\n"
    "  });\n"
    "  /* nested matches cover the same width once: merge the spans */\n"
    "  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
    "  spans.forEach(function (sp) {\n"
    "    if (sp[0] >= end) { sum += sp[1] - sp[0]; end = sp[1]; }\n"
    "    else if (sp[1] > end) { sum += sp[1] - end; end = sp[1]; }\n"
    "  });\n"
    "  var pct = XW > 0 ? 100 * sum / XW : 0;\n"
    "  term = t;\n"
    "  matched.textContent = 'Matched: ' + pct.toFixed(2) + '% (' + n + ' frames)';\n"
    "  svg.setAttribute('data-matched', pct.toFixed(2));\n"
    "  resetBtn.style.display = '';\n"
    "}\n"
    "function resetSearch() {\n"
    "  frames.forEach(function (f) { f.r.setAttribute('fill', f.fill); });\n"
    "  term = ''; matched.textContent = ''; resetBtn.style.display = 'none';\n"
    "  svg.removeAttribute('data-matched');\n"
    "}\n"
    "function ask() {\n"
    "  var t = window.prompt('Search for functions (regular expression)', term);\n"
    "  if (t !== null) search(t);\n"
    "}\n"
    "function frameOf(el) {\n"
    "  var g = el && el.closest ? el.closest('g.f') : null;\n"
    "  return g ? frames[+g.getAttribute('data-i')] : null;\n"
    "}\n"
    "svg.addEventListener('click', function (e) {\n"
    "  if (e.target === unzoomBtn) { unzoom(); return; }\n"
    "  if (e.target === searchBtn) { ask(); return; }\n"
    "  if (e.target === resetBtn) { resetSearch(); return; }\n"
    "  if (e.target === granBtn && /^https?:/.test(location.protocol)) {\n"
    "    var u = new URL(location.href);\n"
    "    u.searchParams.set('granularity', granBtn.getAttribute('data-to'));\n"
    "    location.href = u.toString(); return;\n"
    "  }\n"
    "  var f = frameOf(e.target);\n"
    "  if (f) zoom(f);\n"
    "});\n"
    "svg.addEventListener('mouseover', function (e) {\n"
    "  var f = frameOf(e.target);\n"
    "  details.textContent = f ? f.tip : '';\n"
    "});\n"
    "window.addEventListener('keydown', function (e) {\n"
    "  if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F') || e.key === '/') {\n"
    "    e.preventDefault(); ask();\n"
    "  } else if (e.key === 'Escape') {\n"
    "    unzoom(); resetSearch();\n"
    "  }\n"
    "});\n"
    "/* #s=REGEX&z=NAME: open searched and zoomed on the widest frame called NAME */\n"
    "location.hash.slice(1).split('&').forEach(function (kv) {\n"
    "  var eq = kv.indexOf('='), k = eq < 0 ? kv : kv.slice(0, eq), v;\n"
    "  try { v = decodeURIComponent(eq < 0 ? '' : kv.slice(eq + 1)); } catch (e) { return; }\n"
    "  if (k === 's' || k === 'search') search(v);\n"
    "  if (k === 'z' || k === 'zoom') {\n"
    "    var best = null;\n"
    "    frames.forEach(function (f) { if (f.name === v && (!best || f.w > best.w)) best = f; });\n"
    "    if (best) zoom(best);\n"
    "  }\n"
    "});\n"
    "svg.setAttribute('data-ready', String(frames.length));\n"
    "})();\n"
    "]]></script>\n";

int
pe_prof_write_svg(pe_prof_t *p, pe_sink_t *out, int value_index, const char *title)
{
    pe_bufsink_t b;
    pe_sink_t *o = &b.sink;
    pe_flame_t f;
    svg_t c;
    char total[64];
    int err, cerr, height, ybottom;

    err = pe_flame_init(&f, p, value_index, 1);
    if (err)
        return err;
    if (pe_bufsink_open(&b, out, PE_FLAME_BUF)) {
        pe_flame_free(&f);
        return -ENOMEM;
    }
    memset(&c, 0, sizeof(c));
    c.o = o;
    c.f = &f;
    c.vt = pe_prof_type(p, f.vi);
    c.nlevels = f.maxdepth + 1;
    c.scale = f.total > 0 ? (double)SVG_XW / (double)f.total : 0;
    ybottom = SVG_TOP + c.nlevels * SVG_ROW;
    height = ybottom + SVG_BOTTOM;
    human(total, sizeof(total), f.total, c.vt);
    if (!title || !*title)
        title = "Flame graph";

    pe_sink_printf(o,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                   "height=\"%d\" viewBox=\"0 0 %d %d\" data-x0=\"%d\" data-xw=\"%d\" "
                   "data-cw=\"%.2f\">\n<title>",
                   SVG_WIDTH, height, SVG_WIDTH, height, SVG_PAD, SVG_XW, SVG_CHAR_W);
    pe_sink_xml_str(o, title, (size_t)-1);
    pe_sink_printf(o,
                   "</title>\n%s<rect width=\"100%%\" height=\"100%%\" fill=\"#f6f6ef\"/>\n"
                   "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
                   svg_style, SVG_WIDTH / 2);
    pe_sink_xml_str(o, title, (size_t)-1);
    pe_sink_printf(o, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">",
                   SVG_WIDTH / 2);
    pe_sink_xml_str(o, c.vt->type ? c.vt->type : "", (size_t)-1);
    pe_sink_put(o, " (");
    pe_sink_xml_str(o, c.vt->unit ? c.vt->unit : "", (size_t)-1);
    pe_sink_printf(o, "): total %s", total);
    if (f.ndropped)
        pe_sink_printf(o, ", %u negative not drawn", f.ndropped);
    pe_sink_printf(o,
                   ". Click to zoom.</text>\n"
                   "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"44\" style=\"display:none\">"
                   "Reset Zoom</text>\n"
                   "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"44\" text-anchor=\"end\">"
                   "Search</text>\n"
                   "<text id=\"resetsearch\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\" "
                   "style=\"display:none\">Reset Search</text>\n"
                   "<text id=\"gran\" class=\"btn\" x=\"%d\" y=\"24\" data-to=\"%s\">%s</text>\n",
                   SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_PAD,
                   f.by_line ? "functions" : "lines",
                   f.by_line ? "One box per function" : "One box per line");
    err = frames(&c);
    pe_sink_printf(o,
                   "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
                   "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
                   SVG_PAD, ybottom + 20, SVG_WIDTH - SVG_PAD, ybottom + 20);
    pe_sink_put(o, svg_script);
    pe_sink_put(o, "</svg>\n");
    cerr = pe_bufsink_close(&b);
    if (!err)
        err = cerr;
    pe_flame_free(&f);
    return err;
}
