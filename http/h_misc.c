/*
 * h_misc.c: the small endpoints: the /debug/pprof/ index (every route with one
 * line, and the settings table), /debug/pprof/cmdline, Go's symbol protocol,
 * and the 503 answer of capabilities that are not built yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/config.h"
#include "../preload/init.h"
#include "../preload/proc.h"
#include "../sampler/account.h"
#include "../stack/pyframes.h"
#include "../symbols/symbols.h"
#include "http_int.h"

/* ---- index ----------------------------------------------------------------------- */

/* A route's parameters as <code> words, each with what its absence means
   (param_table.c), or a dash. */
static void
index_params(pe_sink_t *s, const char *path, const char *list)
{
    char name[33], buf[64];
    const char *def;
    int first = 1;

    while (list && *list) {
        size_t w = strcspn(list, " ");

        if (w && w < sizeof(name)) {
            memcpy(name, list, w);
            name[w] = '\0';
            pe_sink_printf(s, "%s<code>%s</code>", first ? "" : ", ", name);
            if (path && (def = pe_http_param_default(path, name, buf, sizeof(buf)))) {
                pe_sink_put(s, "<span class=\"def\">=");
                pe_sink_xml_str(s, def, (size_t)-1);
                pe_sink_put(s, "</span>");
            }
            first = 0;
        }
        list += w;
        list += strspn(list, " ");
    }
    if (first)
        pe_sink_put(s, "&mdash;");
}

/*
 * What a person wants most, one click each, above the full table: a CPU
 * flame graph of the next 10 s, the live heap as a flame graph, every
 * thread's stack, the heap timeline, a trace to download.  A token the page
 * was opened with rides along, so that each link works as it is.
 */
static void
index_quick(pe_sink_t *s, const pe_req_t *r)
{
    static const struct {
        const char *path, *query, *what, *after;
        int download;
    } quick[] = {
        {"/profile", "?duration=10&format=svg", "CPU flame graph of the next 10 s",
         "every thread; the page loads when the 10 s are over", 0},
        {"/debug/pprof/heap", "?format=svg", "Live heap as a flame graph",
         "sampled allocations not yet freed, by stack", 0},
        {"/debug/pprof/goroutine", "?debug=2", "Every thread's stack, now", "as text", 0},
        {"/heap_timeline", "", "Heap timeline",
         "RSS, heap, glibc arenas and threads over the last hour", 0},
        {"/debug/pprof/trace", "?seconds=5", "A 5 s trace to download",
         "every thread on a time axis: open trace.json in ui.perfetto.dev or speedscope", 1},
    };
    const char *token = pe_param(r, "token");

    pe_sink_put(s, "<ul class=\"quick\">\n");
    for (size_t i = 0; i < PE_ARRAY_SIZE(quick); i++) {
        const pe_route_t *rt = pe_http_find_route(quick[i].path);
        const char *why = rt ? pe_http_route_unavailable(rt) : NULL;

        if (!strcmp(quick[i].path, "/heap_timeline") && !pe_heap_hist_running())
            why = "the heap history thread is not running";
        pe_sink_printf(s, "<li%s><a href=\"%s", why ? " class=\"off\"" : "", quick[i].path);
        pe_sink_xml_str(s, quick[i].query, (size_t)-1);
        if (token) {
            pe_sink_put(s, quick[i].query[0] ? "&amp;token=" : "?token=");
            pe_sink_xml_str(s, token, (size_t)-1);
        }
        pe_sink_printf(s, "\"%s>%s</a> &mdash; ", quick[i].download ? " download" : "",
                       quick[i].what);
        pe_sink_xml_str(s, quick[i].after, (size_t)-1);
        if (why) {
            pe_sink_put(s, " <b>(unavailable: ");
            pe_sink_xml_str(s, why, (size_t)-1);
            pe_sink_put(s, ")</b>");
        }
        pe_sink_put(s, "</li>\n");
    }
    pe_sink_put(s, "</ul>\n");
}

/* The address this request came to: its Host header (origin.c checked it),
   else the listening address, 0.0.0.0 read as this machine. */
static void
index_authority(pe_sink_t *s, const pe_req_t *r)
{
    if (r->host && r->host[0]) {
        pe_sink_xml_str(s, r->host, strlen(r->host));
        return;
    }
    pe_sink_xml_str(s, strcmp(pe_cfg.host, "0.0.0.0") ? pe_cfg.host : "127.0.0.1", (size_t)-1);
    pe_sink_printf(s, ":%d", pe_http_listening_port());
}

int
pe_http_h_index(pe_req_t *r)
{
    const char *scheme = pe_cfg.tls_cert[0] ? "https" : "http";
    pe_resp_t resp;
    pe_sink_t *s = &resp.sink;
    char note[64];
    int i;

    pe_http_begin(r, &resp, "text/html; charset=utf-8", NULL);
    pe_sink_printf(
        s,
        "<!DOCTYPE html>\n<html><head><title>profendpoints (pid %d)</title>"
        "<style>body{font-family:sans-serif;margin:2em}td{padding:2px 12px;vertical-align:top}"
        ".off{color:#999}.def{color:#666}ul.quick{font-size:120%%;line-height:1.7}"
        "ul.quick a{font-weight:bold}</style></head><body>\n<h1>profendpoints: ",
        (int)getpid());
    pe_sink_xml_str(s, pe_cfg_progname(), (size_t)-1);
    pe_sink_printf(s, " (pid %d)</h1>\n", (int)getpid());
    index_quick(s, r);
    pe_sink_put(s, "<h2>Every endpoint</h2>\n<table>\n<tr><th>endpoint</th><th>what</th>"
                   "<th>parameters (=what absent means)</th></tr>\n");
    for (i = 0; i < pe_nroutes; i++) {
        const pe_route_t *rt = &pe_routes[i];
        const char *why = pe_http_route_unavailable(rt);

        pe_sink_printf(s, "<tr%s><td>", why ? " class=\"off\"" : "");
        if (rt->methods & PE_M_GET)
            pe_sink_printf(s, "<a href=\"%s%s\">%s</a>", rt->path, rt->query, rt->path);
        else
            pe_sink_printf(s, "%s (POST)", rt->path);
        pe_sink_put(s, "</td><td>");
        pe_sink_xml_str(s, rt->help, (size_t)-1);
        if (why) {
            pe_sink_put(s, " <b>(unavailable: ");
            pe_sink_xml_str(s, why, (size_t)-1);
            pe_sink_put(s, "; answers 503)</b>");
        }
        pe_sink_put(s, "</td><td>");
        index_params(s, rt->params ? rt->path : NULL, rt->params ? rt->params : "0xADDR+0xADDR");
        pe_sink_put(s, "</td></tr>\n");
    }
    pe_sink_put(s, "</table>\n");
    if (pe_init_attach_note(note, sizeof(note))[0]) {
        pe_sink_printf(s,
                       "<p>Attached to this running process (profep attach), %s: what "
                       "happened before is not seen.",
                       note);
        if (pe_init_no_interposers())
            pe_sink_put(s, " The heap, allocation, mutex and block profiles need the library "
                           "at start (LD_PRELOAD) and answer 503 here.");
        pe_sink_put(s, "</p>\n");
    }
    pe_sink_put(s, "<p>Every endpoint also takes ");
    index_params(s, NULL, PE_HTTP_GLOBAL_PARAMS);
    pe_sink_put(s, ". Other unknown parameters are ignored, except a near miss of a listed one "
                   "(400: did you mean).</p>\n");
    pe_py_init(); /* CPython's frames: said here, not on the program's stderr */
    if (pe_py_note()[0]) {
        pe_sink_put(s, "<p>");
        pe_sink_xml_str(s, pe_py_note(), (size_t)-1);
        pe_sink_put(s, "</p>\n");
    }
    pe_sampler_unsampled_html(s); /* threads no sample reaches (sampler/account.c) */
    pe_http_tree_index(s);        /* the process tree, when there is one (h_tree.c) */
    pe_sink_put(s, "<h2>Settings</h2>\n<table>\n");
    for (i = 0; i < pe_cfg_nrows; i++) {
        const pe_cfg_row_t *row = &pe_cfg_rows[i];
        const char *v = pe_cfg_raw(i);

        pe_sink_printf(s, "<tr><td>%s</td><td>", row->name);
        if (row->flags & PE_CFG_SECRET)
            pe_sink_put(s, v ? "(set)" : "(unset)");
        else
            pe_sink_xml_str(s, v ? v : row->def && row->def[0] ? row->def : "(unset)", (size_t)-1);
        pe_sink_put(s, "</td><td>");
        pe_sink_xml_str(s, row->help, (size_t)-1);
        pe_sink_put(s, "</td></tr>\n");
    }
    pe_sink_printf(s, "</table>\n<p>Use: <code>go tool pprof %s://", scheme);
    index_authority(s, r);
    pe_sink_put(s, "/debug/pprof/profile?seconds=5</code></p>\n</body></html>\n");
    return pe_http_end(&resp);
}

/* ---- cmdline --------------------------------------------------------------------- */

int
pe_http_h_cmdline(pe_req_t *r)
{
    char buf[4096];
    pe_resp_t resp;
    ssize_t n;
    int fd = pe_proc_open(0, "cmdline");

    if (fd < 0)
        return pe_http_error(r, 503, "cannot read /proc/self/cmdline: %s", strerror(-fd));
    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (resp.sink.write(&resp.sink, buf, (size_t)n) < 0)
            break;
    }
    close(fd);
    return pe_http_end(&resp);
}

/* ---- symbol ---------------------------------------------------------------------- */

/*
 * Go's protocol (net/http/pprof Symbol): GET answers "num_symbols: 1"; POST
 * (or GET with a query) of "0xADDR+0xADDR..." answers one "0xADDR name" line
 * per address that resolves.
 */
int
pe_http_h_symbol(pe_req_t *r)
{
    const char *list = r->body;
    char name[512];
    pe_resp_t resp;

    if (!list || !*list) {
        /* A GET's raw query is the list, as Go reads URL.RawQuery; ours was
           split into parameters: an address list has one key and no value. */
        if (r->nparams == 1 && !r->params[0].val[0])
            list = r->params[0].key;
    }
    pe_http_begin(r, &resp, "text/plain; charset=utf-8", NULL);
    pe_sink_put(&resp.sink, "num_symbols: 1\n");
    while (list && *list) {
        char *end;
        unsigned long long addr;

        list += strspn(list, "+ \n\r\t");
        if (!*list)
            break;
        errno = 0;
        addr = strtoull(list, &end, 0);
        if (end == list || errno)
            break;
        if (pe_sym_symbolize((uintptr_t)addr, name, sizeof(name)))
            pe_sink_printf(&resp.sink, "%#llx %s\n", addr, name);
        list = end;
    }
    return pe_http_end(&resp);
}
