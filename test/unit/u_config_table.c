/*
 * u_config_table: pe_cfg_load() as a whole, one environment at a time: what
 * each PROFEP_* variable leaves in pe_cfg, and the exact stderr line a bad
 * value gives (these lines are the interface a user sees; they must not
 * drift).  Also checks the rows themselves (names, fields, defaults that
 * load) and, with --dump, prints "NAME<TAB>default" per row for
 * test/e2e/check_config_doc.sh, which holds README's table to the rows.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http_int.h"
#include "pe_test.h"
#include "preload/config.h"
#include "preload/log.h"

extern char **environ;

static char got[16384];

/* Unset every PROFEP_* variable and TMPDIR, so each case starts clean. */
static void
clear_env(void)
{
    char name[256];
    int i;

again:
    for (i = 0; environ[i]; i++) {
        const char *eq = strchr(environ[i], '=');

        if (eq && (size_t)(eq - environ[i]) < sizeof(name) &&
            (!strncmp(environ[i], "PROFEP_", 7) || !strncmp(environ[i], "TMPDIR=", 7))) {
            memcpy(name, environ[i], (size_t)(eq - environ[i]));
            name[eq - environ[i]] = '\0';
            unsetenv(name);
            goto again;
        }
    }
}

/* Load with exactly these "NAME=value" settings; stderr goes to `got`. */
static void
load_env(const char *const *env)
{
    int saved, fd;
    ssize_t n;

    clear_env();
    for (; *env; env++) {
        char name[256];
        const char *eq = strchr(*env, '=');

        memcpy(name, *env, (size_t)(eq - *env));
        name[eq - *env] = '\0';
        setenv(name, eq + 1, 1);
    }
    memset(&pe_cfg, 0, sizeof(pe_cfg));
    {
        char path[] = "/tmp/u_config_table.XXXXXX";

        fd = mkstemp(path);
        unlink(path);
    }
    saved = dup(2);
    dup2(fd, 2);
    pe_cfg_load();
    dup2(saved, 2);
    close(saved);
    n = pread(fd, got, sizeof(got) - 1, 0);
    got[n > 0 ? n : 0] = '\0';
    close(fd);
}

#define LOAD(...) load_env((const char *const[]){__VA_ARGS__, NULL})
#define SAID(text) CHECKF(!strcmp(got, text), "said [%s], want [%s]", got, text)
#define QUIET() SAID("")

/* The line a refused security setting gives. */
static const char *
refusal(const char *what_why)
{
    static char buf[512];

    snprintf(buf, sizeof(buf),
             "profendpoints: %s; no server: pid %d (%s) runs on without profiling\n", what_why,
             (int)getpid(), pe_cfg_progname());
    return buf;
}

static char *
repeat(char c, size_t n)
{
    char *s = malloc(n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void
check_defaults(void)
{
    LOAD("TMPDIR=/var/tmp");
    QUIET();
    CHECK(!strcmp(pe_cfg.addr, "127.0.0.1:16825") && !strcmp(pe_cfg.host, "127.0.0.1"));
    CHECK(pe_cfg.port == 16825 && !pe_cfg.server_off && !pe_cfg.refuse);
    CHECK(!pe_cfg.match[0] && !pe_cfg.token[0] && !pe_cfg.allowed_hosts[0]);
    CHECK(!pe_cfg.port_file[0] && !pe_cfg.tls_cert[0]);
    CHECK(pe_cfg.heap_rate == 524288 && pe_cfg.ckpt_seconds == 60 && pe_cfg.max_seconds == 600);
    CHECK(pe_cfg.peek_signal == 0 && pe_cfg.peek_seconds == 1 && pe_cfg.children == 1);
    CHECK(pe_cfg.log_level == PE_LOG_INFO && pe_cfg.mutex_rate == 100);
    CHECK(!strcmp(pe_cfg.stage_dir, "/var/tmp"));
    LOAD("TMPDIR=");
    CHECK(!strcmp(pe_cfg.stage_dir, "/tmp"));
    CHECK(pe_cfg_raw(0) == NULL);
}

/* Each bad value: its one line, and the default kept. */
static void
check_bad_values(void)
{
    LOAD("PROFEP_LOG=loud");
    SAID("profendpoints: PROFEP_LOG=loud is not valid (info, warn or off); using info\n");
    CHECK(pe_cfg.log_level == PE_LOG_INFO);

    LOAD("PROFEP_ADDR=host:99999");
    SAID("profendpoints: PROFEP_ADDR=host:99999 is not valid (host:port, :port (every interface), "
         "port (0-65535) or off); "
         "using 127.0.0.1:16825\n");
    CHECK(pe_cfg.port == 16825 && !strcmp(pe_cfg.host, "127.0.0.1") &&
          !strcmp(pe_cfg.addr, "127.0.0.1:16825"));
    LOAD("PROFEP_ADDR=");
    SAID("profendpoints: PROFEP_ADDR= is not valid (host:port, :port (every interface), port "
         "(0-65535) or off); "
         "using 127.0.0.1:16825\n");

    LOAD("PROFEP_HEAP_RATE=bogus");
    SAID("profendpoints: PROFEP_HEAP_RATE=bogus is not valid (bytes >= 0, e.g. 524288 or 512k); "
         "using 524288\n");
    CHECK(pe_cfg.heap_rate == 524288);

    LOAD("PROFEP_HEAP_CHECKPOINT=0.5");
    SAID("profendpoints: PROFEP_HEAP_CHECKPOINT=0.5 is not valid (whole seconds in [1, 3600]); "
         "using 60\n");
    CHECK(pe_cfg.ckpt_seconds == 60);
    LOAD("PROFEP_HEAP_CHECKPOINT=3601");
    SAID("profendpoints: PROFEP_HEAP_CHECKPOINT=3601 is not valid (whole seconds in [1, 3600]); "
         "using 60\n");
    LOAD("PROFEP_HEAP_CHECKPOINT=1.5"); /* the history ticks once a second */
    SAID("profendpoints: PROFEP_HEAP_CHECKPOINT=1.5 is not valid (whole seconds in [1, 3600]); "
         "using 60\n");
    CHECK(pe_cfg.ckpt_seconds == 60);

    LOAD("PROFEP_MAX_SECONDS=0");
    SAID("profendpoints: PROFEP_MAX_SECONDS=0 is not valid (seconds > 0); using 600\n");
    CHECK(pe_cfg.max_seconds == 600);

    LOAD("PROFEP_PEEK_SIGNAL=KILL");
    SAID("profendpoints: PROFEP_PEEK_SIGNAL=KILL is not valid (a signal name such as USR1, a "
         "number, or off); using off\n");
    CHECK(pe_cfg.peek_signal == 0);

    LOAD("PROFEP_PEEK_SECONDS=601");
    SAID("profendpoints: PROFEP_PEEK_SECONDS=601 is not valid (seconds in (0, 600]); using 1\n");
    CHECK(pe_cfg.peek_seconds == 1);

    LOAD("PROFEP_CHILDREN=maybe");
    SAID("profendpoints: PROFEP_CHILDREN=maybe is not valid (on or off); using on\n");
    CHECK(pe_cfg.children == 1);
    LOAD("PROFEP_CHILDREN=");
    SAID("profendpoints: PROFEP_CHILDREN= is not valid (on or off); using on\n");

    LOAD("PROFEP_MUTEX_RATE=-3");
    SAID("profendpoints: PROFEP_MUTEX_RATE=-3 is not valid (an integer N >= 0 (1 in N waits)); "
         "using 100\n");
    CHECK(pe_cfg.mutex_rate == 100);

    LOAD("PROFEP_ALLOWED_HOSTS=good,bad/x, *");
    SAID("profendpoints: PROFEP_ALLOWED_HOSTS: 'bad/x' is not a name, name:port or *; left out\n");
    CHECK(!strcmp(pe_cfg.allowed_hosts, "good,*"));
}

/* Good values, and values that are empty. */
static void
check_good_values(void)
{
    LOAD("PROFEP_LOG=WARN");
    CHECK(pe_cfg.log_level == PE_LOG_WARN);
    LOAD("PROFEP_LOG=debug");
    CHECK(pe_cfg.log_level == PE_LOG_DEBUG);
    LOAD("PROFEP_LOG=off", "PROFEP_HEAP_RATE=bogus"); /* read first: the warning obeys it */
    QUIET();
    CHECK(pe_cfg.log_level == PE_LOG_OFF);
    pe_log_set_level(PE_LOG_INFO);

    LOAD("PROFEP_ADDR=off");
    CHECK(pe_cfg.server_off && !strcmp(pe_cfg.addr, "off")); /* host and port unused */
    LOAD("PROFEP_ADDR=0.0.0.0:0");
    QUIET();
    CHECK(!pe_cfg.server_off && pe_cfg.port == 0 && !strcmp(pe_cfg.host, "0.0.0.0"));
    CHECK(!strcmp(pe_cfg.addr, "0.0.0.0:0"));

    LOAD("PROFEP_HEAP_RATE=1m", "PROFEP_HEAP_CHECKPOINT=120", "PROFEP_MAX_SECONDS=30",
         "PROFEP_PEEK_SIGNAL=SIGUSR2", "PROFEP_PEEK_SECONDS=2.5", "PROFEP_CHILDREN=off",
         "PROFEP_MUTEX_RATE=0", "PROFEP_MATCH=u_*", "PROFEP_TOKEN=s3cret");
    QUIET();
    CHECK(pe_cfg.heap_rate == 1048576 && pe_cfg.ckpt_seconds == 120 && pe_cfg.max_seconds == 30);
    CHECK(pe_cfg.peek_signal == SIGUSR2 && pe_cfg.peek_seconds == 2.5 && pe_cfg.children == 0);
    CHECK(pe_cfg.mutex_rate == 0 && !strcmp(pe_cfg.match, "u_*"));
    CHECK(!strcmp(pe_cfg.token, "s3cret") && !pe_cfg.refuse);

    /* Empty: the same as unset for these. */
    LOAD("PROFEP_PEEK_SIGNAL=", "PROFEP_PORT_FILE=", "PROFEP_TLS_CERT=", "PROFEP_STAGE_DIR=",
         "TMPDIR=/var/tmp", "PROFEP_MATCH=", "PROFEP_ALLOWED_HOSTS=");
    QUIET();
    CHECK(pe_cfg.peek_signal == 0 && !pe_cfg.port_file[0] && !pe_cfg.tls_cert[0]);
    CHECK(!strcmp(pe_cfg.stage_dir, "/var/tmp") && !pe_cfg.match[0] && !pe_cfg.refuse);
    LOAD("PROFEP_PEEK_SIGNAL=USR1");
    LOAD("PROFEP_PEEK_SIGNAL=off"); /* off said outright: no bad-value line */
    QUIET();
    CHECK(pe_cfg.peek_signal == 0);

    LOAD("PROFEP_STAGE_DIR=/srv/stage", "PROFEP_PORT_FILE=/run/pe.%p");
    QUIET();
    {
        char want[64];

        snprintf(want, sizeof(want), "/run/pe.%d", (int)getpid());
        CHECK(!strcmp(pe_cfg.stage_dir, "/srv/stage") && !strcmp(pe_cfg.port_file, want));
    }
}

/* Values too long to keep, and security settings that cannot be used. */
static void
check_limits(void)
{
    char *s300 = repeat('d', 300), *s5000 = repeat('p', 5000), *s2000 = repeat('h', 2000);
    char *t8193 = repeat('t', 8193), *m200 = repeat('m', 200), *a200 = repeat('0', 200);
    char env[6][9000];

    snprintf(env[0], sizeof(env[0]), "PROFEP_STAGE_DIR=/%s", s300);
    LOAD(env[0]);
    SAID("profendpoints: PROFEP_STAGE_DIR is longer than 255 bytes; ignored\n");
    CHECK(pe_cfg.stage_dir[0] == '\0'); /* 503, never /tmp */

    snprintf(env[0], sizeof(env[0]), "PROFEP_TLS_CERT=/%s", s300);
    LOAD(env[0]);
    SAID("profendpoints: PROFEP_TLS_CERT is longer than 255 bytes; ignored\n");
    CHECK(!strcmp(pe_cfg.tls_cert, "(PROFEP_TLS_CERT too long)")); /* never plain HTTP */

    snprintf(env[0], sizeof(env[0]), "PROFEP_PORT_FILE=/%s", s5000);
    LOAD(env[0]);
    SAID("profendpoints: PROFEP_PORT_FILE is too long; no port file will be written\n");
    CHECK(pe_cfg.port_file[0] == '\0');

    snprintf(env[0], sizeof(env[0]), "PROFEP_ALLOWED_HOSTS=%s", s2000);
    LOAD(env[0]);
    SAID("profendpoints: PROFEP_ALLOWED_HOSTS is longer than 1023 bytes; no extra host is "
         "allowed\n");
    CHECK(pe_cfg.allowed_hosts[0] == '\0');

    /* The port parses; the text is too long to keep as given. */
    snprintf(env[0], sizeof(env[0]), "PROFEP_ADDR=%s80", a200);
    LOAD(env[0]);
    SAID("profendpoints: PROFEP_ADDR is longer than 127 bytes; ignored\n");
    CHECK(pe_cfg.port == 80 && !pe_cfg.addr[0]);
    CHECK(pe_cfg_raw(0) != NULL && strlen(pe_cfg_raw(0)) == 127);

    LOAD("PROFEP_TOKEN=");
    SAID(refusal("PROFEP_TOKEN is set but empty (unset it to serve without a token)"));
    CHECK(pe_cfg.refuse && pe_cfg.server_off && !pe_cfg.token[0]);
    LOAD("PROFEP_TOKEN= lead");
    SAID(refusal("PROFEP_TOKEN begins or ends with a space (HTTP headers drop it)"));
    snprintf(env[0], sizeof(env[0]), "PROFEP_TOKEN=%s", t8193);
    LOAD(env[0]);
    SAID(refusal("PROFEP_TOKEN is longer than 8192 bytes (the server's request limit)"));
    CHECK(pe_cfg.refuse && !pe_cfg.token[0]);
    snprintf(env[0], sizeof(env[0]), "PROFEP_TOKEN=%.8192s", t8193);
    LOAD(env[0]);
    QUIET();
    CHECK(!pe_cfg.refuse && strlen(pe_cfg.token) == 8192);

    snprintf(env[0], sizeof(env[0]), "PROFEP_MATCH=%s", m200);
    LOAD(env[0]);
    SAID(refusal("PROFEP_MATCH is longer than 127 bytes"));
    CHECK(pe_cfg.refuse && pe_cfg.server_off && !pe_cfg.match[0]);

    LOAD("PROFEP_ADDR=unix:/tmp/pe.sock");
    SAID(refusal("PROFEP_ADDR=unix:... asks for a Unix socket, which Debian's civetweb 1.15 cannot "
                 "listen on (docs/HARDENING.md)"));
    CHECK(pe_cfg.refuse && pe_cfg.server_off);

    /* A refusal is said only in the programs PROFEP_MATCH picks: it is read first. */
    LOAD("PROFEP_TOKEN=", "PROFEP_MATCH=some-other-program");
    QUIET();
    CHECK(pe_cfg.refuse);

    free(s300), free(s5000), free(s2000), free(t8193), free(m200), free(a200);
}

/* Several bad values: one line each, PROFEP_LOG's first, then in the table's order. */
static void
check_order(void)
{
    char s300[301], env[320];

    memset(s300, 'c', 300);
    s300[300] = '\0';
    snprintf(env, sizeof(env), "PROFEP_TLS_CERT=%s", s300);
    LOAD("PROFEP_MUTEX_RATE=x", env, "PROFEP_HEAP_RATE=y", "PROFEP_LOG=z");
    SAID("profendpoints: PROFEP_LOG=z is not valid (info, warn or off); using info\n"
         "profendpoints: PROFEP_HEAP_RATE=y is not valid (bytes >= 0, e.g. 524288 or 512k); "
         "using 524288\n"
         "profendpoints: PROFEP_TLS_CERT is longer than 255 bytes; ignored\n"
         "profendpoints: PROFEP_MUTEX_RATE=x is not valid (an integer N >= 0 (1 in N waits)); "
         "using 100\n");
}

static char html[65536];
static size_t html_len;

static int
html_write(pe_sink_t *sink, const void *buf, size_t len)
{
    (void)sink;
    if (html_len + len >= sizeof(html))
        return -ENOSPC;
    memcpy(html + html_len, buf, len);
    html[html_len += len] = '\0';
    return 0;
}

/* The index lists every row once: the value read, else the default; never the token. */
static void
check_index(void)
{
    pe_sink_t sink = {html_write, 0};
    pe_req_t *r = calloc(1, sizeof(*r));
    char want[256];
    const char *p;
    int i, rows = 0;

    LOAD("PROFEP_TOKEN=s3cret-value", "PROFEP_HEAP_RATE=1m");
    r->method = "GET";
    r->path = "/debug/pprof/";
    r->capture = &sink;
    html_len = 0;
    pe_http_h_index(r);
    for (i = 0; i < pe_cfg_nrows; i++) {
        snprintf(want, sizeof(want), "<tr><td>%s</td><td>", pe_cfg_rows[i].name);
        CHECKF(strstr(html, want) != NULL, "%s not in the index", pe_cfg_rows[i].name);
    }
    for (p = html; (p = strstr(p, "<tr><td>PROFEP_")); p++)
        rows++;
    CHECKF(rows == pe_cfg_nrows, "%d settings listed, %d rows", rows, pe_cfg_nrows);
    CHECK(strstr(html, "s3cret-value") == NULL);
    CHECK(strstr(html, "<td>PROFEP_TOKEN</td><td>(set)</td>") != NULL);
    CHECK(strstr(html, "<td>PROFEP_HEAP_RATE</td><td>1m</td>") != NULL);
    CHECK(strstr(html, "<td>PROFEP_MAX_SECONDS</td><td>600</td>") != NULL);
    CHECK(strstr(html, "<td>PROFEP_MATCH</td><td>(unset)</td>") != NULL);
    CHECK(strstr(html, "<td>PROFEP_STAGE_DIR</td><td>(unset)</td>") != NULL);
    free(r);
}

/* The rows themselves: names, fields, and defaults that load quietly as given. */
static void
check_rows(void)
{
    pe_cfg_t unset;
    char env[300];
    int i, j;

    for (i = 0; i < pe_cfg_nrows; i++) {
        const pe_cfg_row_t *row = &pe_cfg_rows[i];

        CHECKF(!strncmp(row->name, "PROFEP_", 7), "%s", row->name);
        for (j = 0; j < i; j++)
            CHECKF(strcmp(row->name, pe_cfg_rows[j].name), "%s twice", row->name);
        CHECKF(row->parse && row->help && row->help[0], "%s", row->name);
        CHECKF(row->size > 0 && row->off + row->size <= sizeof(pe_cfg_t), "%s", row->name);
        CHECKF(row->early >= 0 && row->early <= 2, "%s", row->name);

        /* A bad value: at most one line, and never "(null)" in it. */
        snprintf(env, sizeof(env), "%s=%%bogus value%%", row->name);
        LOAD(env);
        CHECKF(!strchr(got, '\n') || strchr(got, '\n') == got + strlen(got) - 1, "%s: %s",
               row->name, got);
        CHECKF(!strstr(got, "(null)"), "%s", got);

        /* The default, given as a value, loads quietly and changes nothing. */
        if (!row->def)
            continue;
        LOAD("TMPDIR=/var/tmp");
        memcpy(&unset, &pe_cfg, sizeof(unset));
        snprintf(env, sizeof(env), "%s=%s", row->name, row->def);
        LOAD(env, "TMPDIR=/var/tmp");
        QUIET();
        CHECKF(!memcmp(&unset, &pe_cfg, sizeof(pe_cfg)), "%s=%s", row->name, row->def);
    }
    CHECK(!strcmp(pe_cfg_doc_default(&pe_cfg_rows[0]), "127.0.0.1:16825"));
}

/* --dump: "NAME<TAB>default as README gives it" per row, for check_config_doc.sh. */
static int
dump(void)
{
    int i;

    for (i = 0; i < pe_cfg_nrows; i++)
        printf("%s\t%s\n", pe_cfg_rows[i].name, pe_cfg_doc_default(&pe_cfg_rows[i]));
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--dump"))
        return dump();
    check_index(); /* first: the loader keeps what it read, once per process */
    check_defaults();
    check_bad_values();
    check_good_values();
    check_limits();
    check_order();
    check_rows();
    return pe_test_done();
}
