/*
 * svg.c: the model as a self-contained interactive flame graph (SVG with its
 * own small script; nothing is fetched).  The root ("all") is the bottom row
 * and callees stack upwards; a frame's width is its share of the total of one
 * sample type; siblings are in name order.  Each frame is a <g class="f kK">
 * (K its kind: whose code it is, enum pe_prof_kind) with a <title> tooltip
 * (the whole name, "[inlined]" for an inlined call, the source file and, by
 * line, the line; value, percentage), a <rect> coloured by kind and a label
 * cut to fit: the short name without glibc's symbol versions ("@@GLIBC_2.34"),
 * or "File:Line; Function" with granularity=lines.  Addresses without a name
 * are one "[object]" box per parent (flame_int.h).  Inlined calls have dashed
 * outlines.  A legend under the graph names the kinds drawn.  Comments of the
 * profile that start with "hint: " are shown under the title.
 * The script lays the graph out again at the window's width (at load and on
 * resize; without it the document keeps its 1200-unit layout, scaled), and
 * adds click-to-zoom (the frame fills the width, its ancestors stay as a
 * dimmed bar, the root or "Reset Zoom" or Escape undoes it), search (a prompt
 * for a regular expression, or Ctrl-F or '/': matches turn magenta and the
 * bottom line gives the share of the total they cover), an icicle toggle (root
 * on top, callees downwards), a callers view (the leaf functions at the root,
 * built in the page from the boxes' self shares), a button switching between
 * one box per function and one per line (the page's URL again, with
 * granularity= changed), and state from the URL fragment
 * (#s=REGEX&z=NAME&v=icicle&c=1) so a link can open zoomed, searched, upside
 * down or by callers.
 *
 * Layout is one sweep over the stacks in flame-graph order (flame_int.h): a frame
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

#include "../profile/model.h"
#include "flame_int.h"
#include "render.h"
#include "render_int.h"

/* Geometry, in SVG user units (pixels at 100%).  The script redoes the
   horizontal layout at the window's width; these are the fallback's. */
#define SVG_WIDTH 1200
#define SVG_PAD 10                       /* left and right margin */
#define SVG_XW (SVG_WIDTH - 2 * SVG_PAD) /* width of the root frame */
#define SVG_TOP 62                       /* y of the first row, without hint lines */
#define SVG_HINT 18                      /* pitch of the hint lines under the subtitle */
#define SVG_ROW 16                       /* row pitch; boxes are SVG_ROW - 1 high */
#define SVG_BOTTOM 58                    /* room for the details line and the legend */
#define SVG_CHAR_W 7.3                   /* width of one 12px monospace character */
#define SVG_MIN_W 0.1                    /* narrower frames are not drawn */
#define SVG_NAME_MAX 2048                /* longer names keep their version suffixes */

typedef struct svg_s {
    pe_sink_t *o;
    const pe_flame_t *f;
    const pe_prof_vt_t *vt;
    int nlevels;    /* rows: the root plus the deepest stack */
    int top;        /* y of the first row */
    double scale;   /* pixels per unit of value */
    unsigned kinds; /* bit k: a frame of kind k was drawn (the legend's rows) */
    int inlined;    /* an inlined frame was drawn */
} svg_t;

/* Per kind (enum pe_prof_kind): the class, the legend's words, and the fill's
   base colour and spread (each channel base + hash % spread); all light, so
   black labels stay readable. */
static const struct {
    const char *cls, *legend;
    int r, g, b, dr, dg, db;
} kinds[PE_PROF_NKINDS] = {
    [PE_PROF_KIND_OTHER] = {"kother", "kernel or unknown", 184, 184, 184, 16, 0, 0},
    [PE_PROF_KIND_MAIN] = {"kmain", "the program", 226, 92, 32, 26, 50, 40},
    [PE_PROF_KIND_LIB] = {"klib", "shared libraries", 222, 204, 64, 22, 24, 50},
    [PE_PROF_KIND_LIBC] = {"klibc", "libc", 128, 172, 228, 30, 30, 26},
    [PE_PROF_KIND_PYTHON] = {"kpy", "Python", 112, 200, 104, 40, 40, 36},
    [PE_PROF_KIND_JIT] = {"kjit", "JIT code", 86, 204, 200, 30, 30, 30},
    [PE_PROF_KIND_SELF] = {"kself", "the profiler (libprofendpoints)", 190, 150, 226, 28, 28, 26},
};

/* ---- text ------------------------------------------------------------------------ */

/* Number of characters (code points, '?' for each bad byte) in s. */
static size_t
text_chars(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    int k;

    while (*u) {
        k = pe_sink_xml_char_len(u);
        u += k ? k : 1;
        n++;
    }
    return n;
}

/*
 * name without the symbol versions the symbol table gives glibc's functions
 * ("memcpy@@GLIBC_2.14", "pthread_cond_wait@GLIBC_2.3.2"): a '@' or "@@" then
 * an upper-case word of letters, digits, '_' and '.', up to a space or the
 * end.  Writes into buf and returns it, or returns name itself when there is
 * nothing to drop or it does not fit.
 */
const char *
pe_prof_no_versions(const char *name, char *buf, size_t len)
{
    const char *at = strchr(name, '@'), *s, *e;
    size_t o = 0;

    if (!at || strlen(name) >= len)
        return name;
    for (s = name; *s;) {
        if (*s == '@' && s > name && s[-1] != '@') {
            e = s + 1 + (s[1] == '@');
            if (*e >= 'A' && *e <= 'Z') {
                while ((*e >= 'A' && *e <= 'Z') || (*e >= 'a' && *e <= 'z') ||
                       (*e >= '0' && *e <= '9') || *e == '_' || *e == '.')
                    e++;
                if (!*e || *e == ' ' || *e == ';') {
                    s = e;
                    continue;
                }
            }
        }
        buf[o++] = *s++;
    }
    buf[o] = '\0';
    return buf;
}

/*
 * Whether the first k characters of a name that does not fit say something:
 * at least SVG_CUT_MIN of them after its leading qualifiers and underscores
 * ("std::", "core::ptr::", "__"), so a small box shows "sleep_f.." or
 * "std::sort.." but never "s..", "st.." or "std::__i.." (the tooltip and the
 * search have the whole name).  The script's useful() is the same rule.
 */
#define SVG_CUT_MIN 4

static int
useful_cut(const char *name, size_t k)
{
    size_t i = 0, q = 0;

    while (i < k) {
        size_t w = 0;

        while (i + w < k && (name[i + w] == '_' || (name[i + w] >= 'a' && name[i + w] <= 'z') ||
                             (name[i + w] >= 'A' && name[i + w] <= 'Z') ||
                             (name[i + w] >= '0' && name[i + w] <= '9')))
            w++;
        if (w > 0 && i + w + 1 == k && name[i + w] == ':') /* "std:" is all qualifier */
            q = k;
        if (w == 0 || i + w + 2 > k || name[i + w] != ':' || name[i + w + 1] != ':')
            break;
        i += w + 2;
        q = i;
    }
    while (q < k && name[q] == '_')
        q++;
    return k - q >= SVG_CUT_MIN;
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

/* The fill of a frame: its kind's colour, varied by name so that neighbours
   differ, the same for a function wherever it appears. */
static void
colour(const char *name, int kind, int *r, int *g, int *b)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    *r = kinds[kind].r + (int)(h % (uint32_t)(kinds[kind].dr + 1));
    /* grey stays grey: one spread for all three channels */
    *g = kinds[kind].dg ? kinds[kind].g + (int)((h >> 8) % (uint32_t)(kinds[kind].dg + 1)) : *r;
    *b = kinds[kind].dg ? kinds[kind].b + (int)((h >> 20) % (uint32_t)(kinds[kind].db + 1)) : *r;
}

/* ---- frames ---------------------------------------------------------------------- */

/*
 * The tooltip's words for a frame: the whole name, "[inlined]" for an inlined
 * call, and where: the file and line, or, when the box joins several lines of
 * one function, the file alone.  An "[object]" box names its object.
 */
static void
put_tip(const svg_t *c, const pe_prof_frame_t *fr)
{
    pe_sink_t *o = c->o;

    if (fr->anon) { /* one box for many addresses: say what they share */
        pe_sink_xml_str(o, fr->anon, (size_t)-1);
        pe_sink_put(o, " addresses without a name");
        if (fr->file) {
            pe_sink_put(o, " in ");
            pe_sink_xml_str(o, fr->file, (size_t)-1);
        }
        return;
    }
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
    int y = c->top + (c->nlevels - 1 - level) * SVG_ROW, r, g, b;
    double pct = c->f->total ? 100.0 * (double)width / (double)c->f->total : 0;
    const char *name = fr ? pe_flame_key(c->f, fr) : "all";
    int kind = fr && fr->kind < PE_PROF_NKINDS ? fr->kind : PE_PROF_KIND_OTHER;
    char shown[SVG_NAME_MAX];
    size_t fit, len;
    char val[64];

    if (w < SVG_MIN_W && level > 0)
        return;
    if (level == 0) {
        r = 215, g = 215, b = 205;
    } else {
        colour(name, kind, &r, &g, &b);
        c->kinds |= 1u << kind;
        c->inlined |= fr->inlined;
    }
    /* the label: what makes the box, without symbol versions (the tooltip keeps them) */
    name = pe_prof_no_versions(name, shown, sizeof(shown));
    human(val, sizeof(val), width, c->vt);
    /* data-n: the label the script fits into the box again after a zoom. */
    if (!fr)
        pe_sink_put(o, "<g class=\"f root\" data-n=\"");
    else
        pe_sink_printf(o, "<g class=\"f %s%s\" data-n=\"", kinds[kind].cls,
                       fr->inlined ? " inl" : "");
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
    len = text_chars(name);
    if (len <= fit)
        pe_sink_xml_str(o, name, len);
    else if (fit >= 3 && useful_cut(name, fit - 2)) {
        pe_sink_xml_str(o, name, fit - 2);
        pe_sink_put(o, "..");
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
             pe_flame_same(pe_flame_key(f, open_frame[common]), pe_flame_name(f, &s, common));
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
                                /* the window's canvas too, where the graph ends */
                                "svg { background: #f6f6ef; }\n"
                                "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
                                "text.l { pointer-events: none; }\n"
                                "#title { font-size: 17px; }\n"
                                ".hint { fill: #8a3a00; }\n"
                                ".btn { fill: #1a5fb4; cursor: pointer; }\n"
                                ".btn:hover { text-decoration: underline; }\n"
                                "g.f { cursor: pointer; }\n"
                                "g.f:hover rect { stroke: #000; stroke-width: 0.6; }\n"
                                "g.anc rect { opacity: 0.55; }\n"
                                "g.inl rect { stroke: #7a4a00; stroke-width: 0.6; "
                                "stroke-dasharray: 3 2; }\n"
                                "</style>\n";

/*
 * The script: plain ES5, no libraries, and constant (http/csp.c allows it by
 * its hash).  It reads the geometry back from the rects at load, as shares
 * of the root's width and rows from the root, so the document stays usable
 * (tooltips, labels) without it.  Elements with data-r sit that far from the
 * right edge.
 */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function () {\n"
    "'use strict';\n"
    "var svg = document.documentElement, MATCH = 'rgb(230,0,230)', EPS = 2e-5;\n"
    "function num(k) { return +svg.getAttribute(k); }\n"
    "var X0 = num('data-x0'), W0 = num('data-w'), CW = num('data-cw'), TOP = num('data-top');\n"
    "var ROW = num('data-row'), NL = num('data-levels'), H = num('height');\n"
    "var W = W0, XW = W0 - 2 * X0, icicle = false, zoomed = null;\n"
    "function $(id) { return document.getElementById(id); }\n"
    "var details = $('details'), matched = $('matched'), unzoomBtn = $('unzoom');\n"
    "var searchBtn = $('search'), resetBtn = $('resetsearch'), granBtn = $('gran');\n"
    "var flipBtn = $('flip'), callersBtn = $('callers');\n"
    "var rights = svg.querySelectorAll('[data-r]'), SVGNS = 'http://www.w3.org/2000/svg';\n"
    "var frames = [], rootFrame = null, term = '', calleeFrames = frames, callerFrames = null;\n"
    "var gs = document.getElementsByClassName('f');\n"
    "for (var i = 0; i < gs.length; i++) {\n"
    "  var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "  var tip = g.getElementsByTagName('title')[0].textContent, cut = tip.lastIndexOf(' (');\n"
    "  var f = { g: g, r: r, l: g.getElementsByTagName('text')[0], tip: tip,\n"
    "    name: g.getAttribute('data-n') || (cut < 0 ? tip : tip.slice(0, cut)),\n"
    "    fill: r.getAttribute('fill'),\n"
    "    a: (+r.getAttribute('x') - X0) / XW, b: +r.getAttribute('width') / XW,\n"
    "    lv: NL - 1 - Math.round((+r.getAttribute('y') - TOP) / ROW) };\n"
    "  g.setAttribute('data-i', String(i));\n"
    "  g.peFrame = f;\n"
    "  if (g.classList.contains('root')) rootFrame = f;\n"
    "  frames.push(f);\n"
    "}\n"
    "function useful(s, k) {\n"
    "  return k - /^(?:\\w+::)*(?:\\w+:$)?_*/.exec(s.slice(0, k))[0].length >= 4;\n"
    "}\n"
    "function fit(f, w) {\n"
    "  var n = w > 6 ? Math.floor((w - 6) / CW) : 0, s = '';\n"
    "  if (f.name.length <= n) s = f.name;\n"
    "  else if (n >= 3 && useful(f.name, n - 2)) s = f.name.slice(0, n - 2) + '..';\n"
    "  if (f.l.textContent !== s) f.l.textContent = s;\n"
    "}\n"
    "/* a and b: start and width as shares of the root's width */\n"
    "function place(f, a, b, anc) {\n"
    "  var x = X0 + a * XW, w = b * XW, y = TOP + (icicle ? f.lv : NL - 1 - f.lv) * ROW;\n"
    "  f.r.setAttribute('x', x.toFixed(2));\n"
    "  f.r.setAttribute('width', w.toFixed(2));\n"
    "  f.r.setAttribute('y', String(y));\n"
    "  f.l.setAttribute('x', (x + 3).toFixed(2));\n"
    "  f.l.setAttribute('y', (y + ROW - 4.5).toFixed(1));\n"
    "  fit(f, w);\n"
    "  f.g.style.display = '';\n"
    "  if (anc) f.g.classList.add('anc'); else f.g.classList.remove('anc');\n"
    "}\n"
    "function hide(f) { f.g.style.display = 'none'; }\n"
    "function zoom(z) {\n"
    "  if (z === rootFrame) { unzoom(); return; }\n"
    "  var s = 1 / z.b;\n"
    "  frames.forEach(function (f) {\n"
    "    if (f.lv < z.lv) {\n"
    "      /* a row nearer the root: keep the frames the zoomed one sits on */\n"
    "      if (f.a <= z.a + EPS && f.a + f.b >= z.a + z.b - EPS) place(f, 0, 1, true);\n"
    "      else hide(f);\n"
    "    } else if (f.a >= z.a - EPS && f.a + f.b <= z.a + z.b + EPS) {\n"
    "      place(f, (f.a - z.a) * s, f.b * s, false);\n"
    "    } else {\n"
    "      hide(f);\n"
    "    }\n"
    "  });\n"
    "  zoomed = z;\n"
    "  unzoomBtn.style.display = '';\n"
    "  svg.setAttribute('data-zoom', z.name);\n"
    "}\n"
    "function unzoom() {\n"
    "  frames.forEach(function (f) { place(f, f.a, f.b, false); });\n"
    "  zoomed = null;\n"
    "  unzoomBtn.style.display = 'none';\n"
    "  svg.removeAttribute('data-zoom');\n"
    "}\n"
    "function layout() { if (zoomed) zoom(zoomed); else unzoom(); }\n"
    "/* the window's width: the root frame fills it, less the margins */\n"
    "function resize() {\n"
    "  var w = svg.getBoundingClientRect().width;\n"
    "  if (!(w >= 200)) w = W0;\n"
    "  if (Math.abs(w - W) < 0.5 && svg.getAttribute('data-width')) return;\n"
    "  W = w; XW = W - 2 * X0;\n"
    "  svg.setAttribute('viewBox', '0 0 ' + W.toFixed(2) + ' ' + H);\n"
    "  for (var k = 0; k < rights.length; k++)\n"
    "    rights[k].setAttribute('x', (W - +rights[k].getAttribute('data-r')).toFixed(2));\n"
    "  layout();\n"
    "  fitTitle();\n"
    "  svg.setAttribute('data-width', W.toFixed(2));\n"
    "}\n"
    "/* a narrow window: the title is cut before the buttons of its row */\n"
    "var titleEl = $('title'), titleText = titleEl.textContent;\n"
    "function fitTitle() {\n"
    "  var left = Infinity, room, len, k;\n"
    "  for (k = 0; k < rights.length; k++)\n"
    "    if (rights[k].getAttribute('y') === '24') left = Math.min(left, rights[k].getBBox().x);\n"
    "  titleEl.textContent = titleText;\n"
    "  room = left - X0 - 12; len = titleEl.getComputedTextLength();\n"
    "  if (room > 0 && len > room)\n"
    "    titleEl.textContent = titleText.slice(0, Math.max(3, Math.floor(titleText.length *\n"
    "      room / len) - 2)) + '..';\n"
    "}\n"
    "var pending = false;\n"
    "function later() {\n"
    "  if (pending) return;\n"
    "  pending = true;\n"
    "  (window.requestAnimationFrame || setTimeout)(function () { pending = false; resize(); });\n"
    "}\n"
    "function flip() {\n"
    "  icicle = !icicle;\n"
    "  flipBtn.textContent = icicle ? 'Flame view' : 'Icicle view';\n"
    "  svg.setAttribute('data-view', icicle ? 'icicle' : 'flame');\n"
    "  layout();\n"
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
    "      f.r.setAttribute('fill', MATCH); spans.push([f.a, f.a + f.b]); n++;\n"
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
    "  var pct = Math.min(100, 100 * sum);\n"
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
    "  return g ? g.peFrame : null;\n"
    "}\n"
    "/* The callers view: the same samples with the leaf functions at the root.\n"
    "   Each box's self share (its width less its children's) is one stack,\n"
    "   read back from the boxes' nesting and merged from the leaf outwards. */\n"
    "function node(tag, cls) {\n"
    "  var e = document.createElementNS(SVGNS, tag);\n"
    "  if (cls) e.setAttribute('class', cls);\n"
    "  return e;\n"
    "}\n"
    "function buildCallers() {\n"
    "  var rows = [], top = { kids: {} }, out = [];\n"
    "  calleeFrames.forEach(function (f) { (rows[f.lv] = rows[f.lv] || []).push(f); f.sub = 0; "
    "});\n"
    "  rows.forEach(function (row) { row.sort(function (x, y) { return x.a - y.a; }); });\n"
    "  calleeFrames.forEach(function (f) {\n"
    "    var row = rows[f.lv - 1], lo = 0, hi, mid;\n"
    "    if (!row) return;\n"
    "    for (hi = row.length - 1; lo < hi;) {\n"
    "      mid = (lo + hi + 1) >> 1;\n"
    "      if (row[mid].a <= f.a + EPS) lo = mid; else hi = mid - 1;\n"
    "    }\n"
    "    f.up = row[lo]; f.up.sub += f.b;\n"
    "  });\n"
    "  calleeFrames.forEach(function (f) {\n"
    "    var self = f.b - f.sub, n = top, p, k;\n"
    "    if (f === rootFrame || self <= EPS) return;\n"
    "    for (p = f; p && p !== rootFrame; p = p.up) {\n"
    "      k = n.kids[p.name] || (n.kids[p.name] = { kids: {}, b: 0, src: p });\n"
    "      k.b += self; n = k;\n"
    "    }\n"
    "  });\n"
    "  (function lay(n, a, lv) {\n"
    "    Object.keys(n.kids).sort().forEach(function (name) {\n"
    "      var k = n.kids[name], src = k.src, g = node('g', src.g.getAttribute('class'));\n"
    "      var t = node('title'), r = node('rect'), l = node('text', 'l');\n"
    "      var cut = src.tip.lastIndexOf(' (');\n"
    "      t.textContent = (cut < 0 ? src.tip : src.tip.slice(0, cut)) + ' (' +\n"
    "        (100 * k.b).toFixed(2) + '%)';\n"
    "      r.setAttribute('height', String(ROW - 1)); r.setAttribute('rx', '2');\n"
    "      r.setAttribute('fill', src.fill);\n"
    "      g.setAttribute('data-n', name);\n"
    "      g.classList.remove('anc');\n"
    "      g.appendChild(t); g.appendChild(r); g.appendChild(l);\n"
    "      svg.insertBefore(g, details);\n"
    "      var f = { g: g, r: r, l: l, tip: t.textContent, name: name, fill: src.fill,\n"
    "                a: a, b: k.b, lv: lv };\n"
    "      g.peFrame = f; out.push(f);\n"
    "      lay(k, a, lv + 1);\n"
    "      a += k.b;\n"
    "    });\n"
    "  })(top, 0, 1);\n"
    "  out.push(rootFrame);\n"
    "  return out;\n"
    "}\n"
    "function showCallers(on) {\n"
    "  if (on && !callerFrames) callerFrames = buildCallers();\n"
    "  (on ? calleeFrames : callerFrames || []).forEach(function (f) {\n"
    "    if (f !== rootFrame) hide(f);\n"
    "  });\n"
    "  frames = on ? callerFrames : calleeFrames;\n"
    "  zoomed = null;\n"
    "  if (term) search(term);\n"
    "  layout();\n"
    "  callersBtn.textContent = on ? 'Callees view' : 'Callers view';\n"
    "  svg.setAttribute('data-callers', on ? '1' : '0');\n"
    "}\n"
    "svg.addEventListener('click', function (e) {\n"
    "  if (e.target === unzoomBtn) { unzoom(); return; }\n"
    "  if (e.target === searchBtn) { ask(); return; }\n"
    "  if (e.target === resetBtn) { resetSearch(); return; }\n"
    "  if (e.target === flipBtn) { flip(); return; }\n"
    "  if (e.target === callersBtn) { showCallers(frames === calleeFrames); return; }\n"
    "  if (e.target === granBtn && /^https?:/.test(location.protocol)) {\n"
    "    var u = new URL(location.href);\n"
    "    u.searchParams.set('granularity', granBtn.getAttribute('data-to'));\n"
    "    u.hash = (icicle ? 'v=icicle&' : '') + (frames !== calleeFrames ? 'c=1' : '');\n"
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
    "window.addEventListener('resize', later);\n"
    "if (window.ResizeObserver) new ResizeObserver(later).observe(svg);\n"
    "resize();\n"
    "/* #s=REGEX&z=NAME&v=icicle: open searched, zoomed on the widest frame called NAME,\n"
    "   upside down */\n"
    "location.hash.slice(1).split('&').forEach(function (kv) {\n"
    "  var eq = kv.indexOf('='), k = eq < 0 ? kv : kv.slice(0, eq), v;\n"
    "  try { v = decodeURIComponent(eq < 0 ? '' : kv.slice(eq + 1)); } catch (e) { return; }\n"
    "  if (k === 's' || k === 'search') search(v);\n"
    "  if (k === 'v' && (v === 'icicle') !== icicle) flip();\n"
    "  if (k === 'c') showCallers(v === '1');\n"
    "  if (k === 'z' || k === 'zoom') {\n"
    "    var best = null;\n"
    "    frames.forEach(function (f) { if (f.name === v && (!best || f.b > best.b)) best = f; });\n"
    "    if (best) zoom(best);\n"
    "  }\n"
    "});\n"
    "svg.setAttribute('data-ready', String(frames.length));\n"
    "})();\n"
    "]]></script>\n";

/* The legend: one swatch per kind drawn, and the inlined calls' dashed outline. */
static void
legend(svg_t *c, int y)
{
    static const int order[] = {
        PE_PROF_KIND_MAIN, PE_PROF_KIND_LIB,  PE_PROF_KIND_LIBC,  PE_PROF_KIND_PYTHON,
        PE_PROF_KIND_JIT,  PE_PROF_KIND_SELF, PE_PROF_KIND_OTHER, -1 /* inlined */};
    pe_sink_t *o = c->o;
    double x = SVG_PAD;
    size_t k;

    pe_sink_put(c->o, "<g id=\"legend\">");
    for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        int inl = order[k] < 0, kind = inl ? 0 : order[k];
        const char *words = inl ? "inlined call" : kinds[kind].legend;

        if (inl ? !c->inlined : !(c->kinds & (1u << kind)))
            continue;
        if (inl)
            pe_sink_printf(o,
                           "<rect class=\"sw\" x=\"%.1f\" y=\"%d\" width=\"18\" height=\"11\" "
                           "fill=\"#fff\" stroke=\"#7a4a00\" stroke-dasharray=\"3 2\"/>",
                           x, y - 10);
        else
            pe_sink_printf(o,
                           "<rect class=\"sw %s\" x=\"%.1f\" y=\"%d\" width=\"18\" height=\"11\" "
                           "fill=\"rgb(%d,%d,%d)\"/>",
                           kinds[kind].cls, x, y - 10, kinds[kind].r + kinds[kind].dr / 2,
                           kinds[kind].dg ? kinds[kind].g + kinds[kind].dg / 2
                                          : kinds[kind].r + kinds[kind].dr / 2,
                           kinds[kind].dg ? kinds[kind].b + kinds[kind].db / 2
                                          : kinds[kind].r + kinds[kind].dr / 2);
        pe_sink_printf(o, "<text x=\"%.1f\" y=\"%d\">%s</text>", x + 23, y, words);
        x += 23 + SVG_CHAR_W * (double)strlen(words) + 18;
    }
    pe_sink_put(o, "</g>\n");
}

/* How many of p's comments are hints ("hint: ..."), shown under the subtitle. */
static int
hints(const pe_prof_t *p)
{
    int i, n = 0;

    for (i = 0; i < p->ncomments; i++)
        n += !strncmp(p->comments[i], "hint: ", 6);
    return n;
}

int
pe_prof_write_svg(pe_prof_t *p, pe_sink_t *out, int value_index, const char *title)
{
    pe_bufsink_t b;
    pe_sink_t *o = &b.sink;
    pe_flame_t f;
    svg_t c;
    char total[64];
    int err, cerr, height, ybottom, nhints, i, y;

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
    nhints = hints(p);
    c.top = SVG_TOP + nhints * SVG_HINT;
    c.scale = f.total > 0 ? (double)SVG_XW / (double)f.total : 0;
    ybottom = c.top + c.nlevels * SVG_ROW;
    height = ybottom + SVG_BOTTOM;
    human(total, sizeof(total), f.total, c.vt);
    if (!title || !*title)
        title = "Flame graph";

    /* width 100%: the script lays the graph out at the window's width; without
       it the viewBox scales the 1200-unit layout to fit. */
    pe_sink_printf(o,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"100%%\" "
                   "height=\"%d\" viewBox=\"0 0 %d %d\" data-x0=\"%d\" data-w=\"%d\" "
                   "data-cw=\"%.2f\" data-top=\"%d\" data-row=\"%d\" data-levels=\"%d\">\n<title>",
                   height, SVG_WIDTH, height, SVG_PAD, SVG_WIDTH, SVG_CHAR_W, c.top, SVG_ROW,
                   c.nlevels);
    pe_sink_xml_str(o, title, (size_t)-1);
    pe_sink_printf(o,
                   "</title>\n%s<rect width=\"100%%\" height=\"100%%\" fill=\"#f6f6ef\"/>\n"
                   "<text id=\"title\" x=\"%d\" y=\"24\">",
                   svg_style, SVG_PAD);
    pe_sink_xml_str(o, title, (size_t)-1);
    pe_sink_printf(o, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", SVG_PAD);
    pe_sink_xml_str(o, c.vt->type ? c.vt->type : "", (size_t)-1);
    pe_sink_put(o, " (");
    pe_sink_xml_str(o, c.vt->unit ? c.vt->unit : "", (size_t)-1);
    pe_sink_printf(o, "): total %s", total);
    if (f.ndropped)
        pe_sink_printf(o, ", %u negative not drawn", f.ndropped);
    pe_sink_put(o, ". Click to zoom.</text>\n");
    for (i = 0, y = SVG_TOP; i < p->ncomments; i++) {
        if (strncmp(p->comments[i], "hint: ", 6))
            continue;
        pe_sink_printf(o, "<text class=\"hint\" x=\"%d\" y=\"%d\">", SVG_PAD, y);
        pe_sink_xml_str(o, p->comments[i] + 6, (size_t)-1);
        pe_sink_put(o, "</text>\n");
        y += SVG_HINT;
    }
    /* Buttons at the right, by their distance from the right edge (data-r). */
    pe_sink_printf(o,
                   "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" data-r=\"%d\" "
                   "text-anchor=\"end\">Search</text>\n"
                   "<text id=\"flip\" class=\"btn\" x=\"%d\" y=\"24\" data-r=\"%d\" "
                   "text-anchor=\"end\">Icicle view</text>\n"
                   "<text id=\"callers\" class=\"btn\" x=\"%d\" y=\"24\" data-r=\"%d\" "
                   "text-anchor=\"end\">Callers view</text>\n"
                   "<text id=\"gran\" class=\"btn\" x=\"%d\" y=\"24\" data-r=\"%d\" "
                   "text-anchor=\"end\" data-to=\"%s\">%s</text>\n"
                   "<text id=\"resetsearch\" class=\"btn\" x=\"%d\" y=\"44\" data-r=\"%d\" "
                   "text-anchor=\"end\" style=\"display:none\">Reset Search</text>\n"
                   "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"44\" data-r=\"%d\" "
                   "text-anchor=\"end\" style=\"display:none\">Reset Zoom</text>\n",
                   SVG_WIDTH - SVG_PAD, SVG_PAD, SVG_WIDTH - SVG_PAD - 66, SVG_PAD + 66,
                   SVG_WIDTH - SVG_PAD - 176, SVG_PAD + 176, SVG_WIDTH - SVG_PAD - 294,
                   SVG_PAD + 294, f.by_line ? "functions" : "lines",
                   f.by_line ? "One box per function" : "One box per line", SVG_WIDTH - SVG_PAD,
                   SVG_PAD, SVG_WIDTH - SVG_PAD - 116, SVG_PAD + 116);
    err = frames(&c);
    pe_sink_printf(o,
                   "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
                   "<text id=\"matched\" x=\"%d\" y=\"%d\" data-r=\"%d\" "
                   "text-anchor=\"end\"></text>\n",
                   SVG_PAD, ybottom + 20, SVG_WIDTH - SVG_PAD, ybottom + 20, SVG_PAD);
    legend(&c, ybottom + 44);
    pe_sink_put(o, svg_script);
    pe_sink_put(o, "</svg>\n");
    cerr = pe_bufsink_close(&b);
    if (!err)
        err = cerr;
    pe_flame_free(&f);
    return err;
}
