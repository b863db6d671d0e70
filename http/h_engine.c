/*
 * h_engine.c: /debug_engine, ProfileEndpoints.jl's way of leaving a result on
 * disk for another tool to pick up.  A POST of one flat JSON object
 * {"profile_type": "cpu_profile", "duration": 2, ...} runs the endpoint of that
 * type (looked up in the route table, so it follows whatever handler the table
 * holds) with the other keys as its query parameters, writes the body into a
 * new file under PROFEP_STAGE_DIR and answers the file's path.  The endpoint's
 * own code does the work; only the sink differs (pe_req_t.capture).  The body
 * is read by json.c.
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
#include "../preload/fd.h"
#include "http_int.h"
#include "json.h"

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

/* ---- the body ------------------------------------------------------------------------ */

struct body_s {
    pe_req_t *sub;    /* the other keys become its parameters */
    const char *type; /* profile_type's value */
};

static int
body_pair(void *arg, const char *key, const char *val, const char **err)
{
    struct body_s *b = arg;
    pe_req_t *sub = b->sub;

    if (!strcmp(key, "profile_type")) {
        b->type = val;
    } else if (val) {
        if (sub->nparams == PE_HTTP_MAX_PARAMS) {
            *err = "too many parameters";
            return -1;
        }
        sub->params[sub->nparams].key = key;
        sub->params[sub->nparams++].val = val;
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
    pe_fd_born_begin(); /* held for the whole job: out of the program's way (preload/fd.h) */
    fd = pe_fd_move_high(mkostemps(path, (int)strlen(suffix), O_CLOEXEC | O_NOFOLLOW));
    pe_fd_born_end();
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
    struct body_s body;
    const char *err;
    int status;
    size_t k;

    sub = calloc(1, sizeof(*sub));
    if (!sub)
        return pe_http_error(r, 503, "out of memory");
    body.sub = sub;
    body.type = NULL;
    if (pe_json_flat_object(r->body ? r->body : "", sub->qbuf, sizeof(sub->qbuf), body_pair, &body,
                            &err)) {
        status = pe_http_error(r, 400,
                               "debug_engine: bad JSON body (%s); expected "
                               "{\"profile_type\": \"cpu_profile\", ...}",
                               err);
        goto out;
    }
    type = body.type;
    for (k = 0; type && k < PE_ARRAY_SIZE(engine_types); k++) {
        if (!strcmp(type, engine_types[k].type)) {
            kind = engine_types[k].kind;
            route = pe_http_find_route(engine_types[k].path);
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
