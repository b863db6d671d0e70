/*
 * config.h: every PROFEP_* setting, read once in the constructor.  Each one is
 * a row of pe_cfg_rows[] (config.c): its name, its default, the parser that
 * reads it into its field of pe_cfg, the allowed values a bad value's line
 * names, and its help line.  One loop reads them all; the /debug/pprof/ index
 * lists the rows, and test/unit/u_config_table.c with test/e2e/check_config_doc.sh
 * hold README's table to them.  A new setting is a field below, a row in
 * config.c and a line in README's table.
 *
 * A bad value is reported in one line and the default kept, except that a
 * security setting's bad value never opens anything: a token, match or
 * transport that cannot be used sets `refuse` (no server, dormant), a bad
 * allowed host is left out, an unusable stage directory means 503.
 * After pe_cfg_load() the struct is read-only; any thread may read it.
 *
 * Signal-safe: reading pe_cfg is.
 */
#ifndef PE_CONFIG_H
#define PE_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "pe.h"

/* The longest PROFEP_TOKEN: it must fit, with the request line, in the 16 KiB
   of request head the server accepts (in an Authorization header). */
#define PE_CFG_TOKEN_MAX 8192

/* PROFEP_CPU_ENGINE: how CPU profiles are sampled (sampler/engine_perf.h). */
enum { PE_CPU_ENGINE_AUTO = 0, PE_CPU_ENGINE_PERF = 1, PE_CPU_ENGINE_TIMER = 2 };
/* PROFEP_SECCOMP: under a filter at load, stay dormant, serve without signal-based
   profiling, or try it (trusting the filter to answer errors). */
enum { PE_SECCOMP_DORMANT = 0, PE_SECCOMP_SERVE = 1, PE_SECCOMP_TRY = 2 };

typedef struct pe_cfg_s {
    char addr[128];      /* PROFEP_ADDR as given ("127.0.0.1:16825") */
    char host[96];       /* parsed host part */
    int port;            /* parsed port, 0 = pick one */
    int server_off;      /* PROFEP_ADDR=off */
    char match[128];     /* PROFEP_MATCH glob, "" = any */
    int64_t heap_rate;   /* PROFEP_HEAP_RATE bytes, 0 = off */
    double ckpt_seconds; /* PROFEP_HEAP_CHECKPOINT: seconds between heap checkpoints */
    double max_seconds;  /* PROFEP_MAX_SECONDS */
    int peek_signal;     /* PROFEP_PEEK_SIGNAL, 0 = off */
    double peek_seconds; /* PROFEP_PEEK_SECONDS */
    int children;        /* PROFEP_CHILDREN: 1 on, 0 off */
    char stage_dir[256]; /* PROFEP_STAGE_DIR, absolute; "" = unusable (503) */
    int log_level;       /* PROFEP_LOG: enum pe_log_level */
    int64_t mutex_rate;  /* PROFEP_MUTEX_RATE: 1 in N contentions, 0 = off */
    char tls_cert[256];  /* PROFEP_TLS_CERT, absolute, "" = plain HTTP */
    int64_t debug_mem;   /* PROFEP_DEBUG_MEM bytes of debug info kept, 0 = no lines */
    int seccomp_serve;   /* PROFEP_SECCOMP: PE_SECCOMP_DORMANT, _SERVE or _TRY (both serve) */
    int cpu_engine;      /* PROFEP_CPU_ENGINE: PE_CPU_ENGINE_AUTO, _PERF or _TIMER */

    /* PROFEP_PORT_FILE, %p expanded, made absolute at load */
    char port_file[PATH_MAX];
    /* PROFEP_TOKEN, "" = none */
    char token[PE_CFG_TOKEN_MAX + 1];
    /* PROFEP_ALLOWED_HOSTS: lowercase, comma-separated */
    char allowed_hosts[1024];
    /* A security setting could not be used: no server, the library stays
       dormant (the line saying why was logged at load). */
    int refuse;
} pe_cfg_t;

extern pe_cfg_t pe_cfg;

typedef struct pe_cfg_row_s pe_cfg_row_t;

/*
 * A row's parser: read text s into field (the row's member of pe_cfg; a parser
 * may also set the members that go with it, as PROFEP_ADDR does host and
 * port).  Returns 0 when s is used; -EINVAL when it is not valid: the loader
 * says "NAME=s is not valid (allowed); using default" and loads the default;
 * any other -errno once the parser has said why itself (or refused): the
 * loader loads the default without a word.  Either way the loader zeroes the
 * field first, so a parser that fails need not undo what it wrote.
 */
typedef int (*pe_cfg_parse_fn)(const pe_cfg_row_t *row, const char *s, void *field);

/* Row flags. */
#define PE_CFG_EMPTY_UNSET 1u /* set but empty counts as unset */
#define PE_CFG_SECRET 2u      /* the index says only whether it is set */

struct pe_cfg_row_s {
    const char *name;    /* "PROFEP_..." */
    const char *def;     /* the text parsed when unset or bad; NULL: the field is zeroed */
    const char *doc_def; /* README's default when def does not say it; else NULL */
    pe_cfg_parse_fn parse;
    const char *allowed; /* for the bad-value line, when parse can return -EINVAL */
    size_t off, size;    /* the field: offsetof and sizeof in pe_cfg_t */
    double lo, hi;       /* bounds, for the parsers that take them */
    unsigned flags;      /* PE_CFG_* */
    int early;           /* rows load by early, highest first (see pe_cfg_load) */
    const char *help;    /* one line, for the index */
};

/* One row per setting, in README's order. */
extern const pe_cfg_row_t pe_cfg_rows[];
extern const int pe_cfg_nrows;

/* The default as README's table gives it: doc_def, def, or "unset". */
PE_TESTONLY const char *pe_cfg_doc_default(const pe_cfg_row_t *row);

/*
 * Read the environment into pe_cfg, row by row: PROFEP_LOG first (early 2) so
 * that every line obeys it, then PROFEP_MATCH (early 1) so that a refusal is
 * said only in the programs it picks, then the rest in table order.  One line
 * per bad value.  Not thread-safe; the constructor calls it once.
 */
void pe_cfg_load(void);
/* The same from "NAME=value" lines instead of the environment, over the
   defaults (preload/attach.c: the attach command's settings); no thread of
   ours may be running. */
void pe_cfg_load_settings(const char *lines);

/*
 * The value row i had in the environment at load (truncated to 127 bytes), or
 * NULL when unset: the index shows what was read, never calling getenv on a
 * server thread (that races a program's setenv).
 */
const char *pe_cfg_raw(int i);

/*
 * Value parsers shared with tests.  Each returns 0, or -EINVAL and leaves *out.
 */
PE_TESTONLY int pe_cfg_parse_addr(const char *s, char *host, size_t hostlen, int *port, int *off);
PE_TESTONLY int pe_cfg_parse_size(const char *s, int64_t *out);   /* 524288, 512k, 1m, 1e6 */
PE_TESTONLY int pe_cfg_parse_seconds(const char *s, double *out); /* > 0 */
PE_TESTONLY int pe_cfg_parse_signal(const char *s, int *out);     /* USR1, SIGUSR1, 10 */
int pe_cfg_parse_bool(const char *s, int *out); /* on/off/1/0/true/false/yes/no (params.c too) */
/*
 * PROFEP_ALLOWED_HOSTS: entries separated by commas or spaces, each a name,
 * name:port, [v6]:port or "*"; written lowercase, comma-separated, into out.
 * Returns 0, -EINVAL when an entry was malformed (it is left out, the others
 * kept; *bad points at it), or -ENAMETOOLONG (out is then empty).
 */
PE_TESTONLY int pe_cfg_parse_hosts(const char *s, char *out, size_t len, const char **bad);
/* Why a PROFEP_TOKEN value cannot be used ("is empty", ...), or NULL when it can. */
PE_TESTONLY const char *pe_cfg_token_problem(const char *s);
/* Expand %p in a path template; 0 or -ENAMETOOLONG. */
int pe_cfg_expand_pid(const char *tmpl, char *out, size_t len, int pid);
/* The program's name: basename of /proc/self/exe (or argv[0]). */
const char *pe_cfg_progname(void);

#endif /* PE_CONFIG_H */
