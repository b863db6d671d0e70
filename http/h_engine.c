/*
 * h_engine.c: /debug_engine, ProfileEndpoints.jl's way of leaving a result on
 * disk for another tool to pick up.  A POST of one flat JSON object
 * {"profile_type": "cpu_profile", "duration": 2, ...} runs the endpoint of that
 * type (looked up in the route table, so it follows whatever handler the table
 * holds) with the other keys as its query parameters, writes the body into a
 * new file under PROFEP_STAGE_DIR and answers the file's path.  The endpoint's
 * own code does the work; only the sink differs (pe_req_t.capture).
 *
 * Limits (nobody may fill a disk or hold the workers through it): at most
 * PE_ENGINE_MAX_JOBS jobs at once (503 beyond), each with a deadline, each
 * file at most 256 MiB; of the files this process wrote, the newest
 * PE_ENGINE_MAX_FILES (and 256 MiB in all) are kept, the
 * oldest removed first (only a file that is still the one we made).  Files
 * are created 0600 with O_EXCL|O_NOFOLLOW under a random name.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../preload/config.h"
#include "http_int.h"

/* profile_type -> endpoint, and the file name's kind. */
static const struct {
    const char *type;
    const char *path;
    const char *kind;
} engine_types[] = {
    {"cpu_profile", "/profile", "cpu"},
    {"wall_profile", "/profile_wall", "wall"},
    {"allocs_profile", "/allocs_profile", "allocs"},
    {"heap_snapshot", "/heap_snapshot", "heap"},
    {"task_backtraces", "/task_backtraces", "tasks"},
};

/* ---- a flat JSON object ------------------------------------------------------------ */

typedef struct json_s {
    const char *s;   /* next input byte */
    char *out;       /* where decoded text goes (the sub-request's qbuf) */
    size_t left;     /* room left there */
    const char *err; /* what was wrong, for the 400 */
} json_t;

static void
json_ws(json_t *j)
{
    while (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r')
        j->s++;
}

static int
json_put(json_t *j, const char *b, size_t n)
{
    if (n >= j->left) {
        j->err = "the parameters are too long";
        return -1;
    }
    memcpy(j->out, b, n);
    j->out += n;
    j->left -= n;
    return 0;
}

static int
hex4(const char *s, unsigned *v)
{
    int i;

    *v = 0;
    for (i = 0; i < 4; i++) {
        char c = s[i];

        *v <<= 4;
        if (c >= '0' && c <= '9')
            *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

/* A JSON string at j->s into the output, NUL-terminated; returns its start or NULL. */
static const char *
json_string(json_t *j)
{
    const char *start = j->out;
    unsigned cp, lo;
    char u[4];
    size_t n;

    if (*j->s != '"') {
        j->err = "expected a string";
        return NULL;
    }
    j->s++;
    for (;;) {
        unsigned char c = (unsigned char)*j->s;

        if (c == '"')
            break;
        if (c < 0x20) {
            j->err = c ? "control character in a string" : "unterminated string";
            return NULL;
        }
        if (c != '\\') {
            if (json_put(j, j->s++, 1))
                return NULL;
            continue;
        }
        c = (unsigned char)j->s[1];
        if (!c) {
            j->err = "unterminated string";
            return NULL;
        }
        j->s += 2;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            u[0] = (char)c;
            n = 1;
            break;
        case 'b':
            u[0] = '\b';
            n = 1;
            break;
        case 'f':
            u[0] = '\f';
            n = 1;
            break;
        case 'n':
            u[0] = '\n';
            n = 1;
            break;
        case 'r':
            u[0] = '\r';
            n = 1;
            break;
        case 't':
            u[0] = '\t';
            n = 1;
            break;
        case 'u':
            if (hex4(j->s, &cp)) {
                j->err = "bad \\u escape";
                return NULL;
            }
            j->s += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && j->s[0] == '\\' && j->s[1] == 'u' &&
                !hex4(j->s + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                j->s += 6;
            }
            if (cp == 0 || (cp >= 0xd800 && cp < 0xe000)) {
                j->err = "bad \\u escape";
                return NULL;
            }
            if (cp < 0x80) {
                u[0] = (char)cp;
                n = 1;
            } else if (cp < 0x800) {
                u[0] = (char)(0xc0 | cp >> 6);
                u[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
            } else if (cp < 0x10000) {
                u[0] = (char)(0xe0 | cp >> 12);
                u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
            } else {
                u[0] = (char)(0xf0 | cp >> 18);
                u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
            }
            break;
        default: j->err = "bad escape in a string"; return NULL;
        }
        if (json_put(j, u, n))
            return NULL;
    }
    j->s++;
    if (json_put(j, "", 1))
        return NULL;
    return start;
}

/*
 * A scalar value as query-parameter text: strings decoded, numbers as
 * written, booleans as true/false.  *val = NULL for null.  0 or -1 (j->err).
 */
static int
json_value(json_t *j, const char **val)
{
    const char *s = j->s;
    size_t n;
    char *end;

    *val = NULL;
    if (*s == '"')
        return (*val = json_string(j)) ? 0 : -1;
    if (*s == '{' || *s == '[') {
        j->err = "values must be strings, numbers or booleans (no objects or arrays)";
        return -1;
    }
    if (!strncmp(s, "null", 4)) {
        j->s += 4;
        return 0;
    }
    if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
        n = *s == 't' ? 4 : 5;
    } else {
        n = strspn(s, "+-0123456789.eE");
        if (n == 0 || (strtod(s, &end), end != s + n)) {
            j->err = "bad value";
            return -1;
        }
    }
    *val = j->out;
    if (json_put(j, s, n) || json_put(j, "", 1))
        return -1;
    j->s += n;
    return 0;
}

/*
 * Parse the body into sub's parameters; *type gets profile_type.  0 or -1
 * with j->err set.
 */
static int
json_parse(json_t *j, pe_req_t *sub, const char **type)
{
    const char *key, *val;

    *type = NULL;
    json_ws(j);
    if (*j->s++ != '{') {
        j->err = "expected a JSON object";
        return -1;
    }
    json_ws(j);
    if (*j->s == '}') {
        j->s++;
    } else {
        for (;;) {
            json_ws(j);
            if (!(key = json_string(j)))
                return -1;
            json_ws(j);
            if (*j->s++ != ':') {
                j->err = "expected ':'";
                return -1;
            }
            json_ws(j);
            if (json_value(j, &val))
                return -1;
            if (!strcmp(key, "profile_type")) {
                *type = val;
            } else if (val) {
                if (sub->nparams == PE_HTTP_MAX_PARAMS) {
                    j->err = "too many parameters";
                    return -1;
                }
                sub->params[sub->nparams].key = key;
                sub->params[sub->nparams++].val = val;
            }
            json_ws(j);
            if (*j->s == ',') {
                j->s++;
                continue;
            }
            if (*j->s++ != '}') {
                j->err = "expected ',' or '}'";
                return -1;
            }
            break;
        }
    }
    json_ws(j);
    if (*j->s) {
        j->err = "text after the object";
        return -1;
    }
    return 0;
}

/* ---- the capture file -------------------------------------------------------------- */

double pe_http_engine_deadline_s;
int64_t pe_http_engine_max_bytes = 256LL << 20;

/* The longest duration a job may ask for: no client can stop it. */
static double
run_seconds(void)
{
    return pe_cfg.max_seconds < PE_ENGINE_MAX_SECONDS ? pe_cfg.max_seconds : PE_ENGINE_MAX_SECONDS;
}

/* The job's deadline: its longest run plus time to write the file. */
static double
job_seconds(void)
{
    return pe_http_engine_deadline_s > 0 ? pe_http_engine_deadline_s : run_seconds() + 15;
}

/* The job's file (a pe_fdsink_t) behind a sink that remembers its first error
   (a full disk must not pass for a profile), and refuses to go past the job's
   deadline or size limit. */
typedef struct capture_s {
    pe_sink_t sink;
    pe_fdsink_t file;
    int err;
    int64_t bytes;
    struct timespec deadline; /* CLOCK_MONOTONIC */
} capture_t;

static int
capture_write(pe_sink_t *sink, const void *buf, size_t len)
{
    capture_t *c = (capture_t *)sink;
    struct timespec now;

    /* pe_http_sleep asks with an empty write whether the job may go on. */
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!c->err && (now.tv_sec > c->deadline.tv_sec ||
                    (now.tv_sec == c->deadline.tv_sec && now.tv_nsec >= c->deadline.tv_nsec)))
        c->err = -ETIME;
    if (!c->err && c->bytes + (int64_t)len > pe_http_engine_max_bytes)
        c->err = -EFBIG;
    if (!c->err && (c->err = pe_sink_write(&c->file.sink, buf, len)) == 0)
        c->bytes += (int64_t)len;
    return c->err;
}

/* ---- the files kept ------------------------------------------------------------------ */

/* The files of this process still in the stage directory, oldest first. */
typedef struct kept_s {
    dev_t dev;
    ino_t ino;
    int64_t bytes;
    char path[sizeof(pe_cfg.stage_dir) + 64];
} kept_t;

static kept_t kept[PE_ENGINE_MAX_FILES];
static int nkept;
static int64_t kept_bytes;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Remove the oldest, if it is still the file we made (not a file someone put in its place). */
static void
drop_oldest(void)
{
    struct stat st;

    if (lstat(kept[0].path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == kept[0].dev &&
        st.st_ino == kept[0].ino)
        unlink(kept[0].path);
    kept_bytes -= kept[0].bytes;
    nkept--;
    memmove(&kept[0], &kept[1], (size_t)nkept * sizeof(kept[0]));
}

/* Keep a new file; then trim to the count and byte limits, the new one always staying. */
static void
keep(const char *path, int fd, int64_t bytes)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return;
    pthread_mutex_lock(&kept_lock);
    if (nkept == PE_ENGINE_MAX_FILES)
        drop_oldest();
    kept[nkept].dev = st.st_dev;
    kept[nkept].ino = st.st_ino;
    kept[nkept].bytes = bytes;
    snprintf(kept[nkept].path, sizeof(kept[nkept].path), "%s", path);
    nkept++;
    kept_bytes += bytes;
    while (nkept > 1 && kept_bytes > pe_http_engine_max_bytes)
        drop_oldest();
    pthread_mutex_unlock(&kept_lock);
}

/* File name suffix for what the endpoint will write. */
static const char *
suffix_for(const pe_req_t *sub, const char *kind)
{
    const char *fmt = pe_param(sub, "format"), *pp = pe_param(sub, "pprof");

    if (!strcmp(kind, "heap"))
        return ".heapsnapshot";
    if (!strcmp(kind, "tasks"))
        return ".txt";
    if (fmt && !strcmp(fmt, "folded"))
        return ".folded";
    if (fmt && !strcmp(fmt, "svg"))
        return ".svg";
    if ((fmt && strcmp(fmt, "pprof")) ||
        (!fmt && pp && (!strcmp(pp, "false") || !strcmp(pp, "0") || !strcmp(pp, "no"))))
        return ".txt";
    return ".pb.gz";
}

/* ---- handler ------------------------------------------------------------------------- */

static int jobs;

/* A job no client can stop must ask for no more than its deadline allows. */
static int
check_duration(pe_req_t *r, const pe_req_t *sub)
{
    const char *d = pe_param(sub, "duration");
    double limit = run_seconds();
    char *end;
    double v;

    if (!d || limit <= 0) /* limit 0: settings never loaded (unit tests) */
        return 0;
    v = strtod(d, &end);
    if (end == d || *end || !(v > limit))
        return 0; /* not a number: the endpoint's own 400 names it */
    return pe_http_error(r, 400,
                         "debug_engine: duration=%s: a job runs at most %g s (min of "
                         "PROFEP_MAX_SECONDS and %d)",
                         d, limit, PE_ENGINE_MAX_SECONDS);
}

static int
run_job(pe_req_t *r, pe_req_t *sub, const pe_route_t *route, const char *kind)
{
    const char *suffix = suffix_for(sub, kind);
    char path[sizeof(pe_cfg.stage_dir) + 64];
    double limit = job_seconds();
    capture_t cap;
    size_t k;
    int fd;

    if (!pe_cfg.stage_dir[0])
        return pe_http_error(r, 503,
                             "PROFEP_STAGE_DIR could not be used (see the line at "
                             "load); debug_engine writes nothing");
    /* profep-KIND-PID-RANDOM.SUFFIX: recognisably ours, and unguessable. */
    snprintf(path, sizeof(path), "%s/profep-%s-%d-XXXXXX%s", pe_cfg.stage_dir, kind, (int)getpid(),
             suffix);
    fd = mkostemps(path, (int)strlen(suffix), O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return pe_http_error(r, 503, "PROFEP_STAGE_DIR=%s is not writable: %s", pe_cfg.stage_dir,
                             strerror(errno));
    memset(&cap, 0, sizeof(cap));
    cap.sink.write = capture_write;
    pe_fdsink_init(&cap.file, fd);
    clock_gettime(CLOCK_MONOTONIC, &cap.deadline);
    cap.deadline.tv_sec += (time_t)limit;
    cap.deadline.tv_nsec += (long)((limit - (double)(time_t)limit) * 1e9);
    if (cap.deadline.tv_nsec >= 1000000000L) {
        cap.deadline.tv_sec++;
        cap.deadline.tv_nsec -= 1000000000L;
    }
    sub->method = "GET";
    sub->capture = &cap.sink;
    route->handler(sub);
    if (sub->status == 200 && !cap.err)
        keep(path, fd, cap.bytes);
    if (close(fd) && !cap.err)
        cap.err = -errno;
    if (sub->status != 200 || cap.err) {
        unlink(path);
        if (cap.err == -ETIME)
            return pe_http_error(r, 503,
                                 "debug_engine: the job passed its deadline (%g s); "
                                 "nothing kept",
                                 limit);
        if (cap.err == -EFBIG)
            return pe_http_error(r, 503, "debug_engine: the result passed %lld bytes; nothing kept",
                                 (long long)pe_http_engine_max_bytes);
        if (sub->status == 200 || sub->status == 0)
            return pe_http_error(r, 503, "writing %s failed: %s", path,
                                 strerror(cap.err ? -cap.err : EIO));
        return pe_http_error(r, sub->status, "%s", sub->errmsg);
    }
    k = strlen(path);
    path[k] = '\n';
    path[k + 1] = '\0';
    return pe_http_reply(r, 200, "text/plain; charset=utf-8", path);
}

int
pe_http_h_debug_engine(pe_req_t *r)
{
    const pe_route_t *route = NULL;
    const char *type, *kind = NULL;
    pe_req_t *sub;
    json_t j;
    int i, status;
    size_t k;

    sub = calloc(1, sizeof(*sub));
    if (!sub)
        return pe_http_error(r, 503, "out of memory");
    j.s = r->body ? r->body : "";
    j.out = sub->qbuf;
    j.left = sizeof(sub->qbuf);
    j.err = NULL;
    if (json_parse(&j, sub, &type)) {
        status = pe_http_error(r, 400,
                               "debug_engine: bad JSON body (%s); expected "
                               "{\"profile_type\": \"cpu_profile\", ...}",
                               j.err);
        goto out;
    }
    for (k = 0; type && k < PE_ARRAY_SIZE(engine_types); k++) {
        if (!strcmp(type, engine_types[k].type)) {
            kind = engine_types[k].kind;
            for (i = 0; i < pe_nroutes; i++)
                if (!strcmp(pe_routes[i].path, engine_types[k].path))
                    route = &pe_routes[i];
            sub->path = engine_types[k].path;
        }
    }
    if (!kind) {
        status = pe_http_error(r, 400,
                               "profile_type=%s: must be one of cpu_profile, "
                               "wall_profile, allocs_profile, heap_snapshot, task_backtraces",
                               type ? type : "(missing)");
        goto out;
    }
    if (!route) {
        status = pe_http_error(r, 503, "profile_type=%s is not available in this build", type);
        goto out;
    }
    if ((status = check_duration(r, sub)))
        goto out;
    if ((status = pe_http_check_params(sub, route))) { /* a typo of a key: said as for a query */
        status = pe_http_error(r, status, "debug_engine: %s", sub->errmsg);
        goto out;
    }
    if (__atomic_add_fetch(&jobs, 1, __ATOMIC_ACQ_REL) > PE_ENGINE_MAX_JOBS) {
        status = pe_http_error(r, 503,
                               "debug_engine: %d jobs are running already; try again when one "
                               "has finished",
                               PE_ENGINE_MAX_JOBS);
    } else {
        status = run_job(r, sub, route, kind);
    }
    __atomic_sub_fetch(&jobs, 1, __ATOMIC_ACQ_REL);
out:
    free(sub);
    return status;
}

void
pe_http_engine_atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

    memcpy(&kept_lock, &fresh, sizeof(kept_lock));
}
