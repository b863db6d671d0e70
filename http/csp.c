/*
 * csp.c: the Content-Security-Policy sent with HTML and SVG.  Nothing may be
 * loaded or fetched; styles are inline; the only script that may run is the
 * flame graph's own, named by its SHA-256 (computed once from what the SVG
 * writer emits, so the two cannot drift apart; sha256.c computes it).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../render/render.h"
#include "http_int.h"
#include "sha256.h"

/* ---- script hashes ------------------------------------------------------------------ */

int
pe_http_script_hashes(const char *doc, size_t len, char *out, size_t outlen)
{
    const char *end = doc + len, *s, *gt, *close, *cd;
    char text[16384], b64[45];
    size_t o = 0, tl, n;

    out[0] = '\0';
    for (s = doc; (s = memmem(s, (size_t)(end - s), "<script", 7)); s = close + 9) {
        if (!(gt = memchr(s, '>', (size_t)(end - s))) ||
            !(close = memmem(gt, (size_t)(end - gt), "</script>", 9)))
            return -1;
        /* The text a browser hashes: the element's character data, with a
           CDATA section's markers dropped (XML documents such as the SVG). */
        gt++;
        tl = 0;
        while (gt < close) {
            if ((size_t)(close - gt) >= 9 && !memcmp(gt, "<![CDATA[", 9)) {
                gt += 9;
                if (!(cd = memmem(gt, (size_t)(close - gt), "]]>", 3)))
                    return -1;
            } else {
                cd = memmem(gt, (size_t)(close - gt), "<![CDATA[", 9);
                if (!cd)
                    cd = close;
                if (memchr(gt, '&', (size_t)(cd - gt)))
                    return -1; /* entities would need decoding: none in ours */
            }
            n = (size_t)(cd - gt);
            if (tl + n > sizeof(text))
                return -1;
            memcpy(text + tl, gt, n);
            tl += n;
            gt = cd;
            if (gt < close && !memcmp(gt, "]]>", 3))
                gt += 3;
        }
        pe_sha256_b64(text, tl, b64);
        n = (size_t)snprintf(out + o, outlen - o, "%s'sha256-%s'", o ? " " : "", b64);
        if (n >= outlen - o)
            return -1;
        o += n;
    }
    return 0;
}

/* ---- policies -------------------------------------------------------------------------- */

/* Nothing loads, nothing frames us, no form or <base> goes anywhere. */
#define CSP_COMMON "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static char svg_policy[512];
static pthread_once_t svg_once = PTHREAD_ONCE_INIT;

/* The flame graph's script as the SVG writer emits it: drawn from an empty profile. */
static void
svg_policy_init(void)
{
    static const pe_prof_vt_t vt = {"samples", "count"};
    char hashes[256] = "";
    pe_membuf_t mb;
    pe_prof_t *p = pe_prof_new(&vt, 1, &vt, 1);

    pe_membuf_init(&mb);
    if (!p || pe_prof_write_svg(p, &mb.sink, -1, "") < 0 ||
        pe_http_script_hashes(mb.data, mb.len, hashes, sizeof(hashes)) < 0)
        hashes[0] = '\0'; /* no script runs; the graph still shows, unzoomable */
    snprintf(svg_policy, sizeof(svg_policy), "%s; style-src 'unsafe-inline'; script-src %s",
             CSP_COMMON, hashes[0] ? hashes : "'none'");
    pe_membuf_free(&mb);
    pe_prof_free(p);
}

const char *
pe_http_csp(const char *content_type)
{
    if (!strncasecmp(content_type, "image/svg+xml", 13)) {
        pthread_once(&svg_once, svg_policy_init);
        return svg_policy;
    }
    if (!strncasecmp(content_type, "text/html", 9))
        return CSP_COMMON "; style-src 'unsafe-inline'";
    return NULL;
}
