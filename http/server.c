/*
 * server.c: civetweb's life cycle.  The server is started from the
 * constructor on a thread of ours with every signal blocked (civetweb's
 * threads inherit the mask and are marked internal by the pthread_create
 * interposer), binds, writes the port file and says so in one line.  It is
 * never stopped: mg_stop would wait for in-flight profiles at exit and hangs
 * in fork children; pe_http_shutdown only asks long handlers to finish.
 * Hardening (README "Hardening"): short header/write timeouts against slow
 * clients, TCP_DEFER_ACCEPT, no document root, optional TLS (PROFEP_TLS_CERT).
 */
#include <arpa/inet.h>
#include <civetweb.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/config.h"
#include "../preload/guard.h"
#include "../preload/init.h"
#include "../preload/log.h"
#include "../preload/real.h"
#include "../preload/threads.h"
#include "../sampler/unwind.h"
#include "http.h"
#include "http_int.h"

/* See the request_timeout_ms option below. */
#define PE_HTTP_IO_TIMEOUT_MS 2000
#define PE_HTTP_IO_TIMEOUT_MS_STR "2000"

static struct mg_context *server_ctx;
static int listen_fd = -1;
static int server_stopping;
static char bind_error[256];
/* PROFEP_TLS_CERT, read in the constructor (getenv later could race a setenv). */
static char tls_cert[256];

/* civetweb reports bind errors only through this callback. */
static int
on_log_message(const struct mg_connection *conn, const char *message)
{
    if (!bind_error[0] && (strstr(message, "bind") || strstr(message, "port")))
        snprintf(bind_error, sizeof(bind_error), "%s", message);
    return 1; /* handled: civetweb prints nothing */
}

static void *
on_init_thread(const struct mg_context *ctx, int thread_type)
{
    pe_threads_mark_internal(); /* already internal through the trampoline; be sure */
    return NULL;
}

static void
write_port_file(const char *host, int port)
{
    char tmp[300], line[160];
    int fd, n;

    if (!pe_cfg.port_file[0])
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", pe_cfg.port_file, (int)getpid());
    n = snprintf(line, sizeof(line), "%s:%d\n", host, port);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    /* Written whole and renamed, so a reader never sees a partial line. */
    if (fd < 0 || write(fd, line, (size_t)n) != n || close(fd) < 0 ||
        rename(tmp, pe_cfg.port_file) < 0) {
        pe_log_warn("cannot write PROFEP_PORT_FILE %s: %s", pe_cfg.port_file, strerror(errno));
        unlink(tmp);
    }
}

static int
is_loopback(const char *host)
{
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost");
}

/* civetweb does not tell which descriptor listens; find it by its port. */
static int
find_listen_fd(int port)
{
    struct sockaddr_in sin;
    socklen_t len;
    int fd, acc;

    for (fd = 0; fd < 4096; fd++) {
        len = sizeof(sin);
        if (getsockname(fd, (struct sockaddr *)&sin, &len) < 0 || sin.sin_family != AF_INET ||
            ntohs(sin.sin_port) != port)
            continue;
        len = sizeof(acc);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc)
            return fd;
    }
    return -1;
}

/*
 * A connection that has sent nothing yet is not handed to a worker until its
 * first bytes arrive (or the kernel gives up deferring): idle connections and
 * port scans hold no worker.
 */
static void
defer_accept(int fd)
{
    int seconds = PE_HTTP_IO_TIMEOUT_MS / 1000;

    if (fd >= 0)
        (void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof(seconds));
}

/*
 * TLS: civetweb (Debian's build) dlopens "libcrypto.so" and "libssl.so" when a
 * listening port ends in "s", and with OpenSSL 3 it cannot: libssl.so.3 lacks
 * SSL_get_peer_certificate, which civetweb requires.  The two small libraries
 * built from http/tls/ssl_shim.c, next to ours, carry those SONAMEs and supply
 * it; loaded first, they are what civetweb's dlopen gets.  Without them we
 * try the plain names (an OpenSSL 1.1 system).  Then OpenSSL is initialised
 * without its atexit cleanup: at exit that would free state our workers may
 * still be using and turn the program's normal exit into a crash.  (A program
 * that initialised OpenSSL before us keeps its own choice.)  Returns 0, or
 * -ENOENT after one warning: the caller stays dormant rather than serve in
 * clear text what was asked to be encrypted.
 */
#define PE_OPENSSL_INIT_NO_ATEXIT 0x00080000L

static void *
tls_load(const char *shim, const char *plain)
{
    char path[PATH_MAX];
    Dl_info self;
    const char *slash;
    void *h = NULL;

    if (dladdr((void *)&pe_http_start, &self) && self.dli_fname &&
        (slash = strrchr(self.dli_fname, '/')) &&
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname,
                 shim) < (int)sizeof(path))
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return h ? h : dlopen(plain, RTLD_NOW | RTLD_LOCAL);
}

static int
tls_prepare(void)
{
    int (*init_crypto)(uint64_t opts, const void *settings);
    void *crypto, *ssl;

    if (access(tls_cert, R_OK) < 0) {
        pe_log_warn("PROFEP_TLS_CERT=%s: %s; no server (TLS was asked for)", tls_cert,
                    strerror(errno));
        return -ENOENT;
    }
    /* Both stay loaded for the life of the process; civetweb uses them. */
    crypto = tls_load("libprofendpoints-crypto.so", "libcrypto.so");
    ssl = crypto ? tls_load("libprofendpoints-ssl.so", "libssl.so") : NULL;
    if (!ssl) {
        pe_log_warn("PROFEP_TLS_CERT is set but OpenSSL cannot be loaded (libssl3, and "
                    "libprofendpoints-ssl.so next to libprofendpoints.so); no server");
        return -ENOENT;
    }
    init_crypto = (int (*)(uint64_t, const void *))dlsym(crypto, "OPENSSL_init_crypto");
    if (init_crypto)
        init_crypto(PE_OPENSSL_INIT_NO_ATEXIT, NULL);
    return 0;
}

static void *
server_main(void *unused)
{
    char ports[160];
    struct mg_callbacks cb;
    struct mg_server_port sp[4];
    int n;
    const char *options[] = {
        "listening_ports",
        ports,
        /* Few workers: profiles hold one each for their duration (see routes.c's
           cap on long requests), quick endpoints keep the rest. */
        "num_threads",
        PE_HTTP_WORKERS_STR,
        /* civetweb 1.15 uses this for two things: the whole request line and
           headers must arrive within it (counted from the first read), and
           each write must make some progress within it.  It is not a limit
           on a handler's own time, so a 600 s profile completes.  Short,
           because a slowloris client holds a worker for this long: 20 slow
           connections on 8 workers delay the next request by ~2 x 2 s. */
        "request_timeout_ms",
        PE_HTTP_IO_TIMEOUT_MS_STR,
        "enable_keep_alive",
        "no",
        /* Request line plus headers; larger ones are refused (413). */
        "max_request_size",
        "16384",
        "listen_backlog",
        "64",
        "enable_auth_domain_check",
        "no",
        /* No document_root: nothing is ever served from disk. */
        tls_cert[0] ? "ssl_certificate" : NULL,
        tls_cert,
        NULL,
    };
    const char *scheme = tls_cert[0] ? "https" : "http";

    pe_threads_mark_internal();
    pe_unwind_warm();
    snprintf(ports, sizeof(ports), "%s:%d%s", pe_cfg.host, pe_cfg.port, tls_cert[0] ? "s" : "");
    if (tls_cert[0] && tls_prepare() < 0)
        goto err_dormant;
    memset(&cb, 0, sizeof(cb));
    cb.log_message = on_log_message;
    cb.init_thread = on_init_thread;
    mg_init_library(0);
    server_ctx = mg_start(&cb, NULL, options);
    if (!server_ctx) {
        pe_log_warn("cannot listen on %s (%s); pid %d (%s) runs on without profiling; "
                    "target one process with PROFEP_MATCH=<program>, or give each its own port "
                    "with PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=/tmp/pe.%%p",
                    ports, bind_error[0] ? bind_error : "bind failed", (int)getpid(),
                    pe_cfg_progname());
        goto err_dormant;
    }
    mg_set_request_handler(server_ctx, "/", pe_http_dispatch, NULL);
    n = mg_get_server_ports(server_ctx, (int)PE_ARRAY_SIZE(sp), sp);
    if (n > 0)
        pe_http_port = sp[0].port;
    listen_fd = find_listen_fd(pe_http_port);
    defer_accept(listen_fd);
    write_port_file(pe_cfg.host, pe_http_port);
    if (!is_loopback(pe_cfg.host) && !pe_cfg.token[0])
        pe_log_warn("listening on non-loopback %s without PROFEP_TOKEN: anyone who can reach "
                    "it can read this process's memory layout and stacks",
                    pe_cfg.host);
    pe_log_info("serving %s://%s:%d (pid %d)", scheme, pe_cfg.host, pe_http_port, (int)getpid());
    if (pe_heap_hist_start() < 0) /* memory over time: only useful with a server */
        pe_log_warn("cannot start the heap history thread; /heap_timeline, /heap_peak and "
                    "heap?since= answer 503");
    return NULL;

err_dormant:
    pe_init_go_dormant();
    return NULL;
}

int pe_http_port;

int
pe_http_start(void)
{
    pthread_attr_t attr;
    pthread_t thread;
    sigset_t all, old;
    int err;

    /* Read with every other setting, in the constructor (config.c). */
    snprintf(tls_cert, sizeof(tls_cert), "%s", pe_cfg.tls_cert);

    /* Threads inherit the creator's mask: ours and civetweb's then never take
       the program's process-directed signals (SIGTERM for a sigwait thread...). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    err = pe_real.pthread_create(&thread, &attr, server_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        pe_log_warn("cannot start the server thread: %s", strerror(err));
        return -err;
    }
    return 0;
}

void
pe_http_shutdown(void)
{
    __atomic_store_n(&server_stopping, 1, __ATOMIC_RELEASE);
}

int
pe_http_stopping(void)
{
    return __atomic_load_n(&server_stopping, __ATOMIC_ACQUIRE);
}

void
pe_http_atfork_child(void)
{
    /* No thread serves the listening socket in the child; close the child's
       copy so that a daemon's surviving child does not keep the port bound. */
    if (listen_fd >= 0)
        close(listen_fd);
    listen_fd = -1;
    server_ctx = NULL;
    server_stopping = 1;
}

double
pe_http_max_seconds(void)
{
    return pe_cfg.max_seconds;
}
