/*
 * config.c: the PROFEP_* rows, their parsers, and the loop that reads them
 * (contract in config.h).  Reading happens once, in the constructor, before
 * any thread of ours runs; nothing here allocates (getenv and fixed buffers
 * only), so it is safe even when the program's first malloc has not happened
 * yet.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proc.h"

pe_cfg_t pe_cfg;

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
        if (hl >= hostlen)
            return -EINVAL;
        if (parse_double(colon + 1, &p) || p < 0 || p > 65535 || p != (int)p)
            return -EINVAL;
        /* ":PORT" is Go's and Docker's every interface: 0.0.0.0, with its
           warning and token rules (server.c, origin.c). */
        if (hl == 0) {
            snprintf(host, hostlen, "0.0.0.0");
        } else {
            memcpy(host, s, hl);
            host[hl] = '\0';
        }
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
    if ((n = pe_proc_self_exe(path, sizeof(path))) <= 0)
        return program_invocation_short_name;
    slash = strrchr(path, '/');
    slash = slash ? slash + 1 : path;
    if (strlen(slash) >= sizeof(name))
        return program_invocation_short_name;
    memcpy(name, slash, strlen(slash) + 1);
    return name;
}

/* ---- loading: what the row parsers share --------------------------------- */

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

/* ---- row parsers (the contract of pe_cfg_parse_fn in config.h) ------------- */

static int
load_log(const pe_cfg_row_t *row, const char *s, void *field)
{
    /* "debug" is for us, not in the help. */
    static const struct {
        const char *name;
        enum pe_log_level level;
    } levels[] = {
        {"info", PE_LOG_INFO}, {"warn", PE_LOG_WARN}, {"off", PE_LOG_OFF}, {"debug", PE_LOG_DEBUG}};
    size_t i;

    (void)row;
    for (i = 0; i < PE_ARRAY_SIZE(levels); i++) {
        if (!strcasecmp(s, levels[i].name)) {
            *(int *)field = levels[i].level;
            pe_log_set_level(levels[i].level);
            return 0;
        }
    }
    return -EINVAL;
}

/* PROFEP_SECCOMP: "dormant", "serve" or "try" (PE_SECCOMP_*). */
static int
load_seccomp(const pe_cfg_row_t *row, const char *s, void *field)
{
    static const char *const names[] = {"dormant", "serve", "try"};

    (void)row;
    for (int i = 0; i < (int)PE_ARRAY_SIZE(names); i++) {
        if (!strcasecmp(s, names[i])) {
            *(int *)field = i;
            return 0;
        }
    }
    return -EINVAL;
}

/* PROFEP_CPU_ENGINE: "auto" (0), "perf" (1) or "timer" (2). */
static int
load_cpu_engine(const pe_cfg_row_t *row, const char *s, void *field)
{
    static const char *const names[] = {"auto", "perf", "timer"};

    (void)row;
    for (int i = 0; i < (int)PE_ARRAY_SIZE(names); i++) {
        if (!strcasecmp(s, names[i])) {
            *(int *)field = i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Kept whole or refused: ignoring a match that does not fit would profile every program. */
static int
load_match(const pe_cfg_row_t *row, const char *s, void *field)
{
    char why[64];

    if (strlen(s) >= row->size) {
        snprintf(why, sizeof(why), "is longer than %zu bytes", row->size - 1);
        refuse(row->name, why);
        return -ENAMETOOLONG;
    }
    memcpy(field, s, strlen(s) + 1);
    return 0;
}

/* Also sets pe_cfg.host, .port and .server_off ("off" sets only server_off:
   host and port are not used then). */
static int
load_addr(const pe_cfg_row_t *row, const char *s, void *field)
{
    if (!strncasecmp(s, "unix:", 5)) {
        /* A Unix socket was asked for, whose file mode says who may profile:
           never a TCP port in its place. */
        refuse("PROFEP_ADDR=unix:...", "asks for a Unix socket, which Debian's civetweb 1.15 "
                                       "cannot listen on (docs/HARDENING.md)");
        return -EPERM;
    }
    if (pe_cfg_parse_addr(s, pe_cfg.host, sizeof(pe_cfg.host), &pe_cfg.port, &pe_cfg.server_off))
        return -EINVAL;
    copy_string(row->name, s, field, row->size);
    return 0;
}

static int
load_port_file(const pe_cfg_row_t *row, const char *s, void *field)
{
    if (pe_cfg_expand_pid(s, field, row->size, (int)getpid())) {
        pe_log_warn("%s is too long; no port file will be written", row->name);
        return -ENAMETOOLONG;
    }
    return absolute_path(row->name, field, row->size);
}

/* A token that cannot be used means no server, never an open one. */
static int
load_token(const pe_cfg_row_t *row, const char *s, void *field)
{
    const char *why = pe_cfg_token_problem(s);

    if (why) {
        refuse(row->name, why);
        return -EPERM;
    }
    copy_string(row->name, s, field, row->size);
    return 0;
}

/* A malformed entry is left out, the others kept. */
static int
load_hosts(const pe_cfg_row_t *row, const char *s, void *field)
{
    const char *bad;

    switch (pe_cfg_parse_hosts(s, field, row->size, &bad)) {
    case -EINVAL:
        pe_log_warn("%s: '%.*s' is not a name, name:port or *; left out", row->name,
                    (int)strcspn(bad, ", \t"), bad);
        return 0;
    case -ENAMETOOLONG:
        pe_log_warn("%s is longer than %zu bytes; no extra host is allowed", row->name,
                    row->size - 1);
        return -ENAMETOOLONG;
    default: return 0;
    }
}

/* Bytes or a count: 524288, 512k, 1m, 1e6. */
static int
load_size(const pe_cfg_row_t *row, const char *s, void *field)
{
    int64_t v;

    (void)row;
    if (pe_cfg_parse_size(s, &v))
        return -EINVAL;
    *(int64_t *)field = v;
    return 0;
}

/* Seconds in (0, 1e9], and within [row->lo, row->hi]. */
static int
load_seconds(const pe_cfg_row_t *row, const char *s, void *field)
{
    double v;

    if (pe_cfg_parse_seconds(s, &v) || v < row->lo || v > row->hi)
        return -EINVAL;
    *(double *)field = v;
    return 0;
}

/* Whole seconds: the heap history ticks once a second, so 1.5 could only
   be kept as 1 while the since= comment said 1.5. */
static int
load_whole_seconds(const pe_cfg_row_t *row, const char *s, void *field)
{
    double v;

    if (load_seconds(row, s, &v) || v != (double)(int64_t)v)
        return -EINVAL;
    *(double *)field = v;
    return 0;
}

static int
load_signal(const pe_cfg_row_t *row, const char *s, void *field)
{
    (void)row;
    if (!strcasecmp(s, "off")) { /* said outright: no bad-value line */
        *(int *)field = 0;
        return 0;
    }
    return pe_cfg_parse_signal(s, field);
}

static int
load_bool(const pe_cfg_row_t *row, const char *s, void *field)
{
    (void)row;
    return pe_cfg_parse_bool(s, field);
}

/* "" (the default) is the temporary directory; a directory given that cannot
   be kept stays "" (503): never the temporary directory in its place. */
static int
load_stage_dir(const pe_cfg_row_t *row, const char *s, void *field)
{
    const char *tmp = getenv("TMPDIR");

    if (*s)
        copy_string(row->name, s, field, row->size);
    else
        snprintf(field, row->size, "%s", tmp && *tmp && strlen(tmp) < 200 ? tmp : "/tmp");
    absolute_path(row->name, field, row->size);
    return 0;
}

/* TLS was asked for: a path that cannot be kept still means TLS (which then
   fails to load: no server), never plain HTTP. */
static int
load_tls_cert(const pe_cfg_row_t *row, const char *s, void *field)
{
    char *path = field;

    copy_string(row->name, s, path, row->size);
    if (path[0])
        absolute_path(row->name, path, row->size);
    if (!path[0])
        snprintf(path, row->size, "(%s too long)", row->name);
    return 0;
}

/* ---- the table --------------------------------------------------------------- */

#define FIELD(f) .off = offsetof(pe_cfg_t, f), .size = sizeof(((pe_cfg_t *)0)->f)

const pe_cfg_row_t pe_cfg_rows[] = {
    {.name = "PROFEP_ADDR",
     .def = "127.0.0.1:16825",
     .parse = load_addr,
     FIELD(addr),
     .allowed = "host:port, :port (every interface), port (0-65535) or off",
     .help = "host:port, :port (every interface, as 0.0.0.0) or port to listen on; port 0 "
             "picks one; off: no server"},
    {.name = "PROFEP_PORT_FILE",
     .parse = load_port_file,
     FIELD(port_file),
     .flags = PE_CFG_EMPTY_UNSET,
     .help = "after binding, write host:port here (%p = pid)"},
    {.name = "PROFEP_MATCH",
     .parse = load_match,
     FIELD(match),
     .early = 1,
     .help = "activate only in programs whose name matches this glob"},
    {.name = "PROFEP_TOKEN",
     .parse = load_token,
     FIELD(token),
     .flags = PE_CFG_SECRET,
     .help = "require Authorization: Bearer TOKEN or token=TOKEN"},
    {.name = "PROFEP_ALLOWED_HOSTS",
     .parse = load_hosts,
     FIELD(allowed_hosts),
     .help = "more Host names to answer (name, name:port or *, comma-separated); localhost, "
             "127.0.0.1, [::1] and the listen address with our port always are"},
    {.name = "PROFEP_HEAP_RATE",
     .def = "524288",
     .parse = load_size,
     FIELD(heap_rate),
     .allowed = "bytes >= 0, e.g. 524288 or 512k",
     .help = "mean bytes between heap samples; 0 turns heap sampling off"},
    {.name = "PROFEP_HEAP_CHECKPOINT",
     .def = "60",
     .parse = load_whole_seconds,
     FIELD(ckpt_seconds),
     .lo = 1,
     .hi = 3600,
     .allowed = "whole seconds in [1, 3600]",
     .help = "seconds between checkpoints of the live heap (heap?since=)"},
    {.name = "PROFEP_MAX_SECONDS",
     .def = "600",
     .parse = load_seconds,
     FIELD(max_seconds),
     .lo = 0,
     .hi = 1e9,
     .allowed = "seconds > 0",
     .help = "largest duration/seconds a request may ask for"},
    /* Unset is off: the bad-value line says "using off". */
    {.name = "PROFEP_PEEK_SIGNAL",
     .parse = load_signal,
     FIELD(peek_signal),
     .flags = PE_CFG_EMPTY_UNSET,
     .allowed = "a signal name such as USR1, a number, or off",
     .help = "e.g. USR1: on that signal print stacks and a CPU report to stderr"},
    {.name = "PROFEP_PEEK_SECONDS",
     .def = "1",
     .parse = load_seconds,
     FIELD(peek_seconds),
     .lo = 0,
     .hi = 600,
     .allowed = "seconds in (0, 600]",
     .help = "length of the peek's CPU report"},
    {.name = "PROFEP_CHILDREN",
     .def = "on",
     .parse = load_bool,
     FIELD(children),
     .allowed = "on or off",
     .help = "off: remove this library from LD_PRELOAD for programs started from here"},
    {.name = "PROFEP_STAGE_DIR",
     .def = "",
     .doc_def = "$TMPDIR or /tmp",
     .parse = load_stage_dir,
     FIELD(stage_dir),
     .help = "where /debug_engine writes its files (default: the temporary directory)"},
    {.name = "PROFEP_LOG",
     .def = "info",
     .parse = load_log,
     FIELD(log_level),
     .early = 2,
     .allowed = "info, warn or off",
     .help = "info, warn or off"},
    {.name = "PROFEP_TLS_CERT",
     .parse = load_tls_cert,
     FIELD(tls_cert),
     .flags = PE_CFG_EMPTY_UNSET,
     .help = "a PEM file with key and certificate: serve https:// only"},
    {.name = "PROFEP_MUTEX_RATE",
     .def = "100",
     .parse = load_size,
     FIELD(mutex_rate),
     .allowed = "an integer N >= 0 (1 in N waits)",
     .help = "record 1 in N contended lock waits; 0 turns it off"},
    {.name = "PROFEP_DEBUG_MEM",
     .def = "256m",
     .parse = load_size,
     FIELD(debug_mem),
     .allowed = "bytes >= 0, e.g. 256m",
     .help = "memory kept for debug info (source lines, inlined frames); 0: names only"},
    {.name = "PROFEP_SECCOMP",
     .def = "dormant",
     .parse = load_seccomp,
     FIELD(seccomp_serve),
     .allowed = "dormant, serve or try",
     .help = "a process started under a seccomp filter: dormant (one line), serve anyway "
             "(CPU, wall and stacks off), or try those too, trusting the filter to answer "
             "errors (as Docker's default profile does)"},
    {.name = "PROFEP_CPU_ENGINE",
     .def = "auto",
     .parse = load_cpu_engine,
     FIELD(cpu_engine),
     .allowed = "auto, perf or timer",
     .help = "how CPU profiles are sampled: perf events (no signal), per-thread timers and "
             "SIGPROF, or perf where the kernel allows it (auto)"},
};
const int pe_cfg_nrows = PE_ARRAY_SIZE(pe_cfg_rows);

#undef FIELD

const char *
pe_cfg_doc_default(const pe_cfg_row_t *row)
{
    return row->doc_def ? row->doc_def : row->def ? row->def : "unset";
}

/* ---- the loop ------------------------------------------------------------------ */

/* What each row's variable held at load; raw_set[i] = 0 when unset. */
static char raw_values[PE_ARRAY_SIZE(pe_cfg_rows)][128];
static char raw_set[PE_ARRAY_SIZE(pe_cfg_rows)];

const char *
pe_cfg_raw(int i)
{
    return i >= 0 && i < pe_cfg_nrows && raw_set[i] ? raw_values[i] : NULL;
}

/* pe_cfg_load_settings: "NAME=value" lines read in place of the environment. */
static const char *settings;
static char setting_value[512];

static const char *
lookup(const char *name)
{
    size_t nl = strlen(name), len;

    if (!settings)
        return getenv(name);
    for (const char *p = settings; *p; p += len + (p[len] == '\n')) {
        len = strcspn(p, "\n");
        if (len > nl && !memcmp(p, name, nl) && p[nl] == '=') {
            snprintf(setting_value, sizeof(setting_value), "%.*s", (int)(len - nl - 1), p + nl + 1);
            return setting_value;
        }
    }
    return NULL;
}

static void
load_row(int i)
{
    const pe_cfg_row_t *row = &pe_cfg_rows[i];
    char *field = (char *)&pe_cfg + row->off;
    const char *v = lookup(row->name);
    int rc = -ENOENT;

    raw_set[i] = v != NULL;
    if (v)
        snprintf(raw_values[i], sizeof(raw_values[i]), "%.*s", (int)sizeof(raw_values[i]) - 1, v);
    if (v && (*v || !(row->flags & PE_CFG_EMPTY_UNSET)))
        rc = row->parse(row, v, field);
    if (rc == 0)
        return;
    if (rc == -EINVAL)
        bad_value(row->name, v, row->allowed ? row->allowed : "see README",
                  row->def ? row->def : "off");
    memset(field, 0, row->size);
    if (row->def && row->parse(row, row->def, field))
        pe_log_warn("%s: the default %s does not load", row->name, row->def); /* a bug: tested */
}

void
pe_cfg_load(void)
{
    int early, i;

    for (early = 2; early >= 0; early--)
        for (i = 0; i < pe_cfg_nrows; i++)
            if (pe_cfg_rows[i].early == early)
                load_row(i);
    /* A refusal stands whatever PROFEP_ADDR said (read after PROFEP_MATCH). */
    if (pe_cfg.refuse)
        pe_cfg.server_off = 1;
    /* PROFEP_ADDR=off asked for no server, so nothing is said either, in any process
       of the tree (stepping aside, a seccomp start): warnings only, unless PROFEP_LOG
       asks for more. */
    else if (pe_cfg.server_off && !getenv("PROFEP_LOG") && pe_cfg.log_level == PE_LOG_INFO) {
        pe_cfg.log_level = PE_LOG_WARN;
        pe_log_set_level(PE_LOG_WARN);
    }
}

void
pe_cfg_load_settings(const char *lines)
{
    memset(&pe_cfg, 0, sizeof(pe_cfg));
    settings = lines;
    pe_cfg_load();
    settings = NULL;
}
