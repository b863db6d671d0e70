/*
 * config.c: the PROFEP_* table, its parsers, and the one-line warnings.
 * Reading happens once, in the constructor, before any thread of ours runs;
 * nothing here allocates (getenv and fixed buffers only), so it is safe even
 * when the program's first malloc has not happened yet.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

pe_cfg_t pe_cfg;

const pe_cfg_row_t pe_cfg_rows[] = {
    {"PROFEP_ADDR", "127.0.0.1:16825",
     "host:port or port to listen on; port 0 picks one; off: no server"},
    {"PROFEP_PORT_FILE", "", "after binding, write host:port here (%p = pid)"},
    {"PROFEP_MATCH", "", "activate only in programs whose name matches this glob"},
    {"PROFEP_TOKEN", "", "require Authorization: Bearer TOKEN or token=TOKEN"},
    {"PROFEP_ALLOWED_HOSTS", "",
     "more Host names to answer (name, name:port or *, comma-separated); localhost, "
     "127.0.0.1, [::1] and the listen address with our port always are"},
    {"PROFEP_HEAP_RATE", "524288", "mean bytes between heap samples; 0 turns heap sampling off"},
    {"PROFEP_HEAP_CHECKPOINT", "60", "seconds between checkpoints of the live heap (heap?since=)"},
    {"PROFEP_MAX_SECONDS", "600", "largest duration/seconds a request may ask for"},
    {"PROFEP_PEEK_SIGNAL", "", "e.g. USR1: on that signal print stacks and a CPU report to stderr"},
    {"PROFEP_PEEK_SECONDS", "1", "length of the peek's CPU report"},
    {"PROFEP_CHILDREN", "on",
     "off: remove this library from LD_PRELOAD for programs started from here"},
    {"PROFEP_STAGE_DIR", "",
     "where /debug_engine writes its files (default: the temporary directory)"},
    {"PROFEP_LOG", "info", "info, warn or off"},
    {"PROFEP_MUTEX_RATE", "100", "record 1 in N contended lock waits; 0 turns it off"},
    {"PROFEP_TLS_CERT", "", "a PEM file with key and certificate: serve https:// only"},
};
const int pe_cfg_nrows = PE_ARRAY_SIZE(pe_cfg_rows);

/* What each row's variable held at load; raw_set[i] = 0 when unset. */
static char raw_values[PE_ARRAY_SIZE(pe_cfg_rows)][128];
static char raw_set[PE_ARRAY_SIZE(pe_cfg_rows)];

const char *
pe_cfg_raw(int i)
{
    return i >= 0 && i < pe_cfg_nrows && raw_set[i] ? raw_values[i] : NULL;
}

/* ---- parsers ---------------------------------------------------------------- */

static int
parse_double(const char *s, double *out)
{
    char *end;
    double v;

    if (!s || !*s)
        return -EINVAL;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

int
pe_cfg_parse_addr(const char *s, char *host, size_t hostlen, int *port, int *off)
{
    const char *colon;
    double p;
    size_t hl;

    if (!s || !*s)
        return -EINVAL;
    if (!strcasecmp(s, "off")) {
        *off = 1;
        return 0;
    }
    colon = strrchr(s, ':');
    if (colon) {
        hl = (size_t)(colon - s);
        if (hl == 0 || hl >= hostlen)
            return -EINVAL;
        if (parse_double(colon + 1, &p) || p < 0 || p > 65535 || p != (int)p)
            return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = '\0';
    } else {
        if (parse_double(s, &p) || p < 0 || p > 65535 || p != (int)p)
            return -EINVAL;
        snprintf(host, hostlen, "127.0.0.1");
    }
    *port = (int)p;
    *off = 0;
    return 0;
}

int
pe_cfg_parse_size(const char *s, int64_t *out)
{
    char buf[64], *end;
    double v, mult = 1;
    size_t n;

    if (!s || !*s || (n = strlen(s)) >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n + 1);
    switch (buf[n - 1]) {
    case 'k':
    case 'K': mult = 1024.0; break;
    case 'm':
    case 'M': mult = 1024.0 * 1024; break;
    case 'g':
    case 'G': mult = 1024.0 * 1024 * 1024; break;
    default: break;
    }
    if (mult != 1)
        buf[n - 1] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (errno || *end || end == buf || !isfinite(v) || v < 0 || v * mult > (double)INT64_MAX / 2)
        return -EINVAL;
    *out = (int64_t)(v * mult);
    return 0;
}

int
pe_cfg_parse_seconds(const char *s, double *out)
{
    double v;

    if (parse_double(s, &v) || v <= 0 || v > 1e9)
        return -EINVAL;
    *out = v;
    return 0;
}

int
pe_cfg_parse_signal(const char *s, int *out)
{
    static const struct {
        const char *name;
        int sig;
    } names[] = {
        {"USR1", SIGUSR1},   {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
        {"WINCH", SIGWINCH}, {"PWR", SIGPWR},   {"URG", SIGURG}, {"TTIN", SIGTTIN},
        {"TTOU", SIGTTOU},   {"INFO", SIGPWR},
    };
    double v;
    size_t i;

    if (!s || !*s)
        return -EINVAL;
    if (!strncasecmp(s, "SIG", 3))
        s += 3;
    for (i = 0; i < PE_ARRAY_SIZE(names); i++) {
        if (!strcasecmp(s, names[i].name)) {
            *out = names[i].sig;
            return 0;
        }
    }
    if (!parse_double(s, &v) && v >= 1 && v < NSIG && v == (int)v && v != SIGKILL && v != SIGSTOP &&
        v != SIGPROF && v != SIGSEGV && v != SIGBUS) {
        *out = (int)v;
        return 0;
    }
    return -EINVAL;
}

int
pe_cfg_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"on", "1", "true", "yes"};
    static const char *const no[] = {"off", "0", "false", "no"};
    size_t i;

    if (!s)
        return -EINVAL;
    for (i = 0; i < PE_ARRAY_SIZE(yes); i++) {
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return 0;
        }
    }
    return -EINVAL;
}

/* One PROFEP_ALLOWED_HOSTS entry: "*", or name[:port], or [v6][:port]. */
static int
host_entry_ok(const char *e, size_t n)
{
    size_t i = 0, end;
    int digits = 0;

    if (n == 1 && e[0] == '*')
        return 1;
    if (n && e[0] == '[') {
        for (i = 1; i < n && e[i] != ']'; i++)
            if (!strchr("0123456789abcdefABCDEF:.", e[i]))
                return 0;
        if (i == n || i == 1)
            return 0;
        end = ++i;
    } else {
        for (; i < n && e[i] != ':'; i++)
            if (!(e[i] >= 'a' && e[i] <= 'z') && !(e[i] >= 'A' && e[i] <= 'Z') &&
                !(e[i] >= '0' && e[i] <= '9') && e[i] != '.' && e[i] != '-' && e[i] != '_')
                return 0;
        end = i;
    }
    if (end == 0)
        return 0;
    if (i == n)
        return 1;
    if (e[i++] != ':')
        return 0;
    for (; i < n; i++, digits++)
        if (e[i] < '0' || e[i] > '9')
            return 0;
    return digits >= 1 && digits <= 5 && atoi(e + end + 1) <= 65535;
}

int
pe_cfg_parse_hosts(const char *s, char *out, size_t len, const char **bad)
{
    size_t o = 0, n, i;
    int rc = 0;

    *bad = NULL;
    if (len)
        out[0] = '\0';
    while (s && *s) {
        s += strspn(s, ", \t");
        n = strcspn(s, ", \t");
        if (!n)
            break;
        if (!host_entry_ok(s, n)) {
            if (!*bad)
                *bad = s;
            rc = -EINVAL;
        } else {
            if (o + n + 2 > len) {
                if (len)
                    out[0] = '\0';
                return -ENAMETOOLONG;
            }
            if (o)
                out[o++] = ',';
            for (i = 0; i < n; i++)
                out[o++] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
            out[o] = '\0';
        }
        s += n;
    }
    return rc;
}

_Static_assert(PE_CFG_TOKEN_MAX == 8192, "the message below names the limit");

const char *
pe_cfg_token_problem(const char *s)
{
    size_t n = strlen(s), i;

    if (n == 0)
        return "is set but empty (unset it to serve without a token)";
    if (n > PE_CFG_TOKEN_MAX)
        return "is longer than 8192 bytes (the server's request limit)";
    if (s[0] == ' ' || s[n - 1] == ' ')
        return "begins or ends with a space (HTTP headers drop it)";
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return "holds a control or non-ASCII byte (not sendable in a header)";
    return NULL;
}

int
pe_cfg_expand_pid(const char *tmpl, char *out, size_t len, int pid)
{
    size_t o = 0;
    int n;

    for (; *tmpl; tmpl++) {
        if (tmpl[0] == '%' && tmpl[1] == 'p') {
            n = snprintf(out + o, len - o, "%d", pid);
            if (n < 0 || (size_t)n >= len - o)
                return -ENAMETOOLONG;
            o += (size_t)n;
            tmpl++;
            continue;
        }
        if (o + 1 >= len)
            return -ENAMETOOLONG;
        out[o++] = *tmpl;
    }
    out[o] = '\0';
    return 0;
}

const char *
pe_cfg_progname(void)
{
    static char name[256];
    char path[4096];
    ssize_t n;
    const char *slash;

    if (name[0])
        return name;
    n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return program_invocation_short_name;
    path[n] = '\0';
    slash = strrchr(path, '/');
    slash = slash ? slash + 1 : path;
    if (strlen(slash) >= sizeof(name))
        return program_invocation_short_name;
    memcpy(name, slash, strlen(slash) + 1);
    return name;
}

/* ---- loading ---------------------------------------------------------------- */

static void
bad_value(const char *var, const char *val, const char *allowed, const char *def)
{
    pe_log_warn("%s=%s is not valid (%s); using %s", var, val, allowed, def);
}

static void
copy_string(const char *var, const char *val, char *dst, size_t len)
{
    if ((size_t)snprintf(dst, len, "%s", val) >= len) {
        pe_log_warn("%s is longer than %zu bytes; ignored", var, len - 1);
        dst[0] = '\0';
    }
}

/* A security setting that cannot be used: one line, and no server at all. */
static void
refuse(const char *what, const char *why)
{
    if (!pe_cfg.match[0] || fnmatch(pe_cfg.match, pe_cfg_progname(), 0) == 0)
        pe_log_warn("%s %s; no server: pid %d (%s) runs on without profiling", what, why,
                    (int)getpid(), pe_cfg_progname());
    pe_cfg.refuse = 1;
    pe_cfg.server_off = 1;
}

/*
 * Make a relative path absolute against the directory at load, once: the
 * server thread uses it later, when main may have changed directory.  0, or
 * -ENAMETOOLONG after one warning (path is then "").
 */
static int
absolute_path(const char *var, char *path, size_t len)
{
    char cwd[PATH_MAX];
    size_t cl, pl = strlen(path);

    if (!path[0] || path[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof(cwd))) {
        pe_log_warn("%s=%s: cannot make it absolute (getcwd: %s); not used", var, path,
                    strerror(errno));
        path[0] = '\0';
        return -ENAMETOOLONG;
    }
    cl = strlen(cwd);
    if (cl + 1 + pl >= len) {
        pe_log_warn("%s=%s: too long once made absolute; not used", var, path);
        path[0] = '\0';
        return -ENAMETOOLONG;
    }
    memmove(path + cl + 1, path, pl + 1);
    memcpy(path, cwd, cl);
    path[cl] = '/';
    return 0;
}

void
pe_cfg_load(void)
{
    const char *v;
    double d;
    int64_t sz;
    int i;

    for (i = 0; i < pe_cfg_nrows; i++) {
        if ((v = getenv(pe_cfg_rows[i].name))) {
            snprintf(raw_values[i], sizeof(raw_values[i]), "%s", v);
            raw_set[i] = 1;
        }
    }

    /* PROFEP_LOG first, so that warnings about the others obey it. */
    pe_cfg.log_level = PE_LOG_INFO;
    if ((v = getenv("PROFEP_LOG"))) {
        if (!strcasecmp(v, "info"))
            pe_cfg.log_level = PE_LOG_INFO;
        else if (!strcasecmp(v, "warn"))
            pe_cfg.log_level = PE_LOG_WARN;
        else if (!strcasecmp(v, "off"))
            pe_cfg.log_level = PE_LOG_OFF;
        else if (!strcasecmp(v, "debug"))
            pe_cfg.log_level = PE_LOG_DEBUG;
        else
            bad_value("PROFEP_LOG", v, "info, warn or off", "info");
    }
    pe_log_set_level((enum pe_log_level)pe_cfg.log_level);

    /* First: a refusal below is said only in the programs PROFEP_MATCH picks. */
    if ((v = getenv("PROFEP_MATCH"))) {
        /* Ignoring a match that does not fit would profile every program. */
        if (strlen(v) >= sizeof(pe_cfg.match))
            refuse("PROFEP_MATCH", "is longer than 127 bytes");
        else
            copy_string("PROFEP_MATCH", v, pe_cfg.match, sizeof(pe_cfg.match));
    }

    snprintf(pe_cfg.addr, sizeof(pe_cfg.addr), "127.0.0.1:16825");
    snprintf(pe_cfg.host, sizeof(pe_cfg.host), "127.0.0.1");
    pe_cfg.port = 16825;
    if ((v = getenv("PROFEP_ADDR")) && !strncasecmp(v, "unix:", 5)) {
        /* A Unix socket was asked for, whose file mode says who may profile:
           never a TCP port in its place. */
        refuse("PROFEP_ADDR=unix:...", "asks for a Unix socket, which Debian's civetweb 1.15 "
                                       "cannot listen on (README: Hardening)");
    } else if (v) {
        if (pe_cfg_parse_addr(v, pe_cfg.host, sizeof(pe_cfg.host), &pe_cfg.port,
                              &pe_cfg.server_off) == 0)
            copy_string("PROFEP_ADDR", v, pe_cfg.addr, sizeof(pe_cfg.addr));
        else
            bad_value("PROFEP_ADDR", v, "host:port, port (0-65535) or off", "127.0.0.1:16825");
    }

    if ((v = getenv("PROFEP_PORT_FILE")) && *v) {
        if (pe_cfg_expand_pid(v, pe_cfg.port_file, sizeof(pe_cfg.port_file), (int)getpid())) {
            pe_log_warn("PROFEP_PORT_FILE is too long; no port file will be written");
            pe_cfg.port_file[0] = '\0';
        }
        absolute_path("PROFEP_PORT_FILE", pe_cfg.port_file, sizeof(pe_cfg.port_file));
    }
    if ((v = getenv("PROFEP_TOKEN"))) {
        /* A token that cannot be used means no server, never an open one. */
        const char *why = pe_cfg_token_problem(v);

        if (why)
            refuse("PROFEP_TOKEN", why);
        else
            copy_string("PROFEP_TOKEN", v, pe_cfg.token, sizeof(pe_cfg.token));
    }
    if ((v = getenv("PROFEP_ALLOWED_HOSTS"))) {
        const char *bad;

        switch (pe_cfg_parse_hosts(v, pe_cfg.allowed_hosts, sizeof(pe_cfg.allowed_hosts), &bad)) {
        case -EINVAL:
            pe_log_warn("PROFEP_ALLOWED_HOSTS: '%.*s' is not a name, name:port or *; left out",
                        (int)strcspn(bad, ", \t"), bad);
            break;
        case -ENAMETOOLONG:
            pe_log_warn("PROFEP_ALLOWED_HOSTS is longer than %zu bytes; no extra host is allowed",
                        sizeof(pe_cfg.allowed_hosts) - 1);
            break;
        default: break;
        }
    }

    pe_cfg.heap_rate = 524288;
    if ((v = getenv("PROFEP_HEAP_RATE"))) {
        if (pe_cfg_parse_size(v, &sz) == 0)
            pe_cfg.heap_rate = sz;
        else
            bad_value("PROFEP_HEAP_RATE", v, "bytes >= 0, e.g. 524288 or 512k", "524288");
    }
    pe_cfg.ckpt_seconds = 60;
    if ((v = getenv("PROFEP_HEAP_CHECKPOINT"))) {
        if (pe_cfg_parse_seconds(v, &d) == 0 && d >= 1 && d <= 3600)
            pe_cfg.ckpt_seconds = d;
        else
            bad_value("PROFEP_HEAP_CHECKPOINT", v, "seconds in [1, 3600]", "60");
    }

    pe_cfg.max_seconds = 600;
    if ((v = getenv("PROFEP_MAX_SECONDS"))) {
        if (pe_cfg_parse_seconds(v, &d) == 0)
            pe_cfg.max_seconds = d;
        else
            bad_value("PROFEP_MAX_SECONDS", v, "seconds > 0", "600");
    }

    if ((v = getenv("PROFEP_PEEK_SIGNAL")) && *v && pe_cfg_parse_signal(v, &pe_cfg.peek_signal)) {
        bad_value("PROFEP_PEEK_SIGNAL", v, "a signal name such as USR1 or a number", "off");
        pe_cfg.peek_signal = 0;
    }
    pe_cfg.peek_seconds = 1;
    if ((v = getenv("PROFEP_PEEK_SECONDS"))) {
        if (pe_cfg_parse_seconds(v, &d) == 0 && d <= 600)
            pe_cfg.peek_seconds = d;
        else
            bad_value("PROFEP_PEEK_SECONDS", v, "seconds in (0, 600]", "1");
    }

    pe_cfg.children = 1;
    if ((v = getenv("PROFEP_CHILDREN")) && pe_cfg_parse_bool(v, &i) == 0)
        pe_cfg.children = i;
    else if (v)
        bad_value("PROFEP_CHILDREN", v, "on or off", "on");

    /* A stage directory that cannot be used stays "" (/debug_engine answers
       503): never the temporary directory in place of the one asked for. */
    if ((v = getenv("PROFEP_STAGE_DIR")) && *v)
        copy_string("PROFEP_STAGE_DIR", v, pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir));
    else
        snprintf(pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir), "%s",
                 (v = getenv("TMPDIR")) && *v && strlen(v) < 200 ? v : "/tmp");
    absolute_path("PROFEP_STAGE_DIR", pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir));

    if ((v = getenv("PROFEP_TLS_CERT")) && *v) {
        copy_string("PROFEP_TLS_CERT", v, pe_cfg.tls_cert, sizeof(pe_cfg.tls_cert));
        if (pe_cfg.tls_cert[0])
            absolute_path("PROFEP_TLS_CERT", pe_cfg.tls_cert, sizeof(pe_cfg.tls_cert));
        if (!pe_cfg.tls_cert[0]) /* TLS was asked for: never fall back to plain HTTP */
            snprintf(pe_cfg.tls_cert, sizeof(pe_cfg.tls_cert), "(PROFEP_TLS_CERT too long)");
    }

    pe_cfg.mutex_rate = 100;
    if ((v = getenv("PROFEP_MUTEX_RATE"))) {
        if (pe_cfg_parse_size(v, &sz) == 0)
            pe_cfg.mutex_rate = sz;
        else
            bad_value("PROFEP_MUTEX_RATE", v, "an integer N >= 0 (1 in N waits)", "100");
    }
}
