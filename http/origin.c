/*
 * origin.c: who may ask.  The Host header must name this server (a web page
 * that rebinds its own name to 127.0.0.1 sends that name), and a browser's
 * cross-site request is refused (Sec-Fetch-Site, Origin).  curl, go tool
 * pprof and scrapers send Host: 127.0.0.1:PORT and neither of the others.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../preload/config.h"
#include "http_int.h"

/* An authority split: name (without brackets for IPv6) and port (-1: none). */
typedef struct authority_s {
    const char *name;
    size_t len;
    int port;
    int v6;
} authority_t;

/* 0, or -1 when `a` is not [v6]:port, [v6], name:port or name. */
static int
split_authority(const char *a, size_t n, authority_t *out)
{
    size_t i = 0, digits;
    int port = 0;

    out->port = -1;
    out->v6 = 0;
    if (n && a[0] == '[') {
        for (i = 1; i < n && a[i] != ']'; i++)
            if (!strchr("0123456789abcdefABCDEF:.", a[i]))
                return -1;
        if (i == n || i == 1)
            return -1;
        out->name = a + 1;
        out->len = i - 1;
        out->v6 = 1;
        i++;
    } else {
        for (; i < n && a[i] != ':'; i++) {
            char c = a[i];

            if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
                c != '.' && c != '-' && c != '_')
                return -1;
        }
        if (i == 0)
            return -1;
        out->name = a;
        out->len = i;
    }
    if (i == n)
        return 0;
    if (a[i++] != ':')
        return -1;
    for (digits = 0; i < n; i++, digits++) {
        if (a[i] < '0' || a[i] > '9' || digits == 5)
            return -1;
        port = port * 10 + (a[i] - '0');
    }
    if (digits == 0 || port > 65535)
        return -1;
    out->port = port;
    return 0;
}

static int
name_is(const authority_t *a, const char *name)
{
    return strlen(name) == a->len && !strncasecmp(a->name, name, a->len);
}

/* A dotted-quad IPv4 literal (inet_pton is strict: no octal, no short forms). */
static int
ipv4_literal(const authority_t *a)
{
    char buf[INET_ADDRSTRLEN];
    struct in_addr in;

    if (a->v6 || a->len >= sizeof(buf))
        return 0;
    memcpy(buf, a->name, a->len);
    buf[a->len] = '\0';
    return inet_pton(AF_INET, buf, &in) == 1;
}

/* Is `a` (port already defaulted) one of PROFEP_ALLOWED_HOSTS's entries? */
static int
allowed_by_list(const pe_http_self_t *self, const authority_t *a)
{
    const char *e = self->allowed;
    authority_t ea;
    size_t n;

    while (e && *e) {
        n = strcspn(e, ",");
        if (n == 1 && e[0] == '*')
            return 1;
        /* An entry without a port allows the name with any port (or none). */
        if (split_authority(e, n, &ea) == 0 && ea.v6 == a->v6 && ea.len == a->len &&
            !strncasecmp(ea.name, a->name, a->len) && (ea.port < 0 || ea.port == a->port))
            return 1;
        e += n;
        e += *e == ',';
    }
    return 0;
}

int
pe_http_authority_ok(const pe_http_self_t *self, const char *text, size_t n, int default_port)
{
    authority_t a;

    if (split_authority(text, n, &a) < 0)
        return 0;
    /* No port: the scheme's default, as browsers omit it. */
    if (a.port < 0)
        a.port = default_port;
    if (allowed_by_list(self, &a))
        return 1;
    /* The name is what a rebinding page cannot fake, the port it can (it
       uses ours too); still, a loopback name must come with our port. */
    if (a.port != self->port)
        return 0;
    if (name_is(&a, "localhost") || (!a.v6 && name_is(&a, "127.0.0.1")) ||
        (a.v6 && name_is(&a, "::1")))
        return 1;
    if (self->listen_host && self->listen_host[0]) {
        /* Bound to every address: any IPv4 literal names us (a literal
           cannot be rebound, and only our own pages live at it). */
        if (!strcmp(self->listen_host, "0.0.0.0"))
            return ipv4_literal(&a);
        return !a.v6 && name_is(&a, self->listen_host);
    }
    return 0;
}

int
pe_http_origin_ok(const pe_http_self_t *self, const char *origin)
{
    const char *want = self->tls ? "https://" : "http://";
    size_t wl = strlen(want);

    /* "null" (sandboxed frames, file: pages, redirects) is nobody's. */
    if (strncasecmp(origin, want, wl))
        return 0;
    origin += wl;
    return pe_http_authority_ok(self, origin, strlen(origin), self->tls ? 443 : 80);
}

int
pe_http_fetch_site_ok(const char *v)
{
    /* none: the person typed the URL or opened a bookmark; same-origin: our
       own index.  cross-site, same-site and anything unknown: refused. */
    return !strcasecmp(v, "none") || !strcasecmp(v, "same-origin");
}

int
pe_http_check_origin(pe_req_t *r, const char *host, const char *origin, const char *fetch_site)
{
    pe_http_self_t self = {pe_cfg.host, pe_http_port, pe_cfg.tls_cert[0] != '\0',
                           pe_cfg.allowed_hosts};
    int default_port = self.tls ? 443 : 80;

    size_t nl;

    /* No Host at all: an HTTP/1.0 client, never a browser. */
    if (host && !pe_http_authority_ok(&self, host, strlen(host), default_port)) {
        nl = host[0] == '[' ? strcspn(host, "]") + (strchr(host, ']') != NULL) : strcspn(host, ":");
        return pe_http_error(r, 421,
                             "Host: %.200s is not an address of this server (a web page "
                             "rebinding its name to us sends its own); to reach it by that "
                             "name, set PROFEP_ALLOWED_HOSTS=%.*s",
                             host, (int)(nl < 200 ? nl : 200), host);
    }
    if (fetch_site && !pe_http_fetch_site_ok(fetch_site))
        return pe_http_error(r, 403,
                             "Sec-Fetch-Site: %.40s: a browser's request from another site is "
                             "refused (web pages cannot drive the profiler); open the URL "
                             "directly, or use curl or go tool pprof",
                             fetch_site);
    if (origin && !pe_http_origin_ok(&self, origin))
        return pe_http_error(r, 403,
                             "Origin: %.200s is not this server: web pages cannot drive the "
                             "profiler (a name of ours can be added with PROFEP_ALLOWED_HOSTS)",
                             origin);
    return 0;
}
