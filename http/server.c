/*
 * server.c: civetweb's life cycle.  The server is started from the
 * constructor on a thread of ours with every signal blocked (civetweb's
 * threads inherit the mask and are marked internal by the pthread_create
 * interposer), binds, writes the port file and says so in one line.  From the
 * constructor the thread first sleeps until PE_HTTP_START_DELAY_MS after
 * load: a program that exits at once (a build tool's thousands of children)
 * never pays for civetweb's threads, the bind or the port file, and one that
 * lives on is served well within 100 ms.  It is
 * never stopped: mg_stop would wait for in-flight profiles at exit and hangs
 * in fork children; pe_http_shutdown asks long handlers to finish and waits
 * (bounded) until they have sent what they recorded.
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
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/config.h"
#include "../preload/fd.h"
#include "../preload/guard.h"
#include "../preload/init.h"
#include "../preload/log.h"
#include "../preload/portfile.h"
#include "../preload/proc.h"
#include "../preload/real.h"
#include "../preload/threads.h"
#include "../preload/tree.h"
#include "../stack/unwind.h"
#include "../symbols/symbols.h"
#include "http.h"
#include "http_int.h"

/* See the request_timeout_ms option below. */
#define PE_HTTP_IO_TIMEOUT_MS 2000
#define PE_HTTP_IO_TIMEOUT_MS_STR "2000"

static struct mg_context *server_ctx;
/*
 * libunwind's first walk in a process (pe_unwind_warm) holds its one-time
 * init lock.  A fork while another thread holds it gives the child a lock
 * nobody will release: the child's first walk, in its server thread or in a
 * signal handler, would block forever.  The server thread warms under
 * warm_lock and a fork holds warm_lock from prepare to after the fork, so a
 * fork never lands inside the walk, and a walk never starts while a fork is
 * being made.  A flag would not do: a fork could test it before the new
 * server thread set it, then the walk start, then the fork copy the lock.
 */
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static int fork_holds_warm; /* prepare took warm_lock (parent/child give it back) */
static int warm_running;    /* the walk is under way (a child copied it mid-way) */
#define PE_HTTP_WARM_WAIT_NS 2000000000LL
static int listen_fd = -1;
static int server_stopping;
static char bind_error[256];
static int bind_error_about_bind;
/* PROFEP_TLS_CERT, read in the constructor (getenv later could race a setenv). */
static char tls_cert[256];
/* Start-up's second phase (preload/init.c orders it; pe_http_start_after's
   argument, kept for a fork child's start). */
static void (*second_phase)(void);
/* CLOCK_MONOTONIC time before which server_main does not bind; 0: at once. */
static int64_t start_not_before_ns;
/*
 * pe_http_step_aside (a process that must be alone): `aside` is set for good
 * and start_wake cuts the deferred start short; start_lock covers the start
 * (mg_start to server_ctx) so that a step aside sees either no server or
 * one it can stop.
 */
static int aside;
static int server_live; /* server_main is started and has not returned */
static sem_t start_wake;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * mg_start listens and accepts before mg_set_request_handler can name our
 * handler: a request in between (a client of the earlier image of a program
 * that exec'd, which listens again on the same port) got civetweb's own 404.
 * Until the handler is in place every request is answered 503 with
 * Retry-After instead.
 */
static int handler_set;

static int
on_begin_request(struct mg_connection *conn)
{
    pe_req_t r;

    if (__atomic_load_n(&handler_set, __ATOMIC_ACQUIRE))
        return 0; /* civetweb goes on to pe_http_dispatch */
    memset(&r, 0, sizeof(r));
    r.conn = conn;
    return pe_http_busy(&r, 1, "the server is starting: ask again");
}

/* civetweb reports bind errors only through this callback. */
static int
on_log_message(const struct mg_connection *conn, const char *message)
{
    /* the first bind or port message, else the first of any kind (say,
       "Cannot create threads"): the reason the warning gives */
    int about_bind = strstr(message, "bind") || strstr(message, "port");

    if (!bind_error[0] || (about_bind && !bind_error_about_bind)) {
        snprintf(bind_error, sizeof(bind_error), "%s", message);
        bind_error_about_bind = about_bind;
    }
    return 1; /* handled: civetweb prints nothing */
}

static void *
on_init_thread(const struct mg_context *ctx, int thread_type)
{
    pe_threads_mark_internal(); /* already internal through the trampoline; be sure */
    return NULL;
}

/* Its registry slot back (preload/threads.h): under LD_PRELOAD the
   pthread_create interposer's exit event does it too (a second call finds
   nothing); after an attach civetweb's threads come straight from libc, and
   each attach/detach cycle would leave their slots taken. */
static void
on_exit_thread(const struct mg_context *ctx, int thread_type, void *thread_pointer)
{
    pe_threads_unregister();
}

/* The port file (preload/portfile.h); the path was made absolute at load
   (config.c), before main could change directory. */
static void
write_port_file(const char *host, int port)
{
    const char *path = pe_cfg.port_file;
    int err;

    if (!path[0] || !(err = pe_portfile_write(path, host, port)))
        return;
    if (err == -ELOOP)
        pe_log_warn("PROFEP_PORT_FILE %s is a symbolic link; left as it is, no port file "
                    "written",
                    path);
    else
        pe_log_warn("cannot write PROFEP_PORT_FILE %s: %s", path, strerror(-err));
}

static int
is_loopback(const char *host)
{
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "[::1]");
}

/* The port of an IPv4 or IPv6 socket address, -1 for any other family. */
static int
sockaddr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return -1;
}

/* civetweb does not tell which descriptor listens; find it by its port
   (ours were moved near the top of the first 1024: preload/fd.h; after an
   attach civetweb's socket() went straight to libc: any listener on our
   port is ours, the port being just bound). */
static int
find_listen_fd(int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, acc, any = pe_init_attached_at() != 0;

    for (fd = 4095; fd >= 0; fd--) {
        len = sizeof(ss);
        if ((!any && !pe_fd_is_ours(fd)) || getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
            sockaddr_port(&ss) != port)
            continue;
        len = sizeof(acc);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc)
            return fd;
    }
    return -1;
}

/*
 * A shell or build tool run with the library loads it again in every child
 * it execs, and each would say that the port is taken (thousands of lines).
 * When the port is held by one of our ancestors (the tree's root, which
 * serves), the child says nothing: the inode of every socket listening on
 * the port (/proc/net/tcp, tcp6) is looked for among the descriptors of each
 * ancestor in turn.  Only after a failed bind, so the cost (a few /proc
 * reads) is never paid by a process that serves.
 */
static int
holds_socket(pid_t pid, const unsigned long *inodes, int n)
{
    char link[64], want[40];
    pe_proc_fds_t it;
    int found = 0, i, fd;

    if (pe_proc_fds_open(&it, pid) < 0)
        return 0;
    while (!found && (fd = pe_proc_fds_next(&it)) >= 0) {
        if (pe_proc_fds_link(&it, fd, link, sizeof(link)) <= 0)
            continue;
        for (i = 0; i < n && !found; i++) {
            snprintf(want, sizeof(want), "socket:[%lu]", inodes[i]);
            found = !strcmp(link, want);
        }
    }
    pe_proc_fds_close(&it);
    return found;
}

static int
port_held_by_ancestor(int port)
{
    unsigned long inodes[8];
    int n, depth;
    pid_t pid;

    if (port <= 0 || (n = pe_proc_tcp_listeners(port, inodes, (int)PE_ARRAY_SIZE(inodes))) == 0)
        return 0;
    for (pid = getppid(), depth = 0; pid > 0 && depth < 64; pid = pe_proc_ppid(pid), depth++) {
        if (holds_socket(pid, inodes, n))
            return 1;
        if (pid == 1)
            break;
    }
    return 0;
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

    pe_fd_born_begin(); /* the loader's descriptors are ours while it reads (preload/fd.h) */
    if (dladdr((void *)&pe_http_start, &self) && self.dli_fname &&
        (slash = strrchr(self.dli_fname, '/')) &&
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname,
                 shim) < (int)sizeof(path))
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen(plain, RTLD_NOW | RTLD_LOCAL);
    pe_fd_born_end();
    return h;
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

/*
 * The server thread: waits out the start delay, then runs start-up's second
 * phase (preload/init.c's, which calls back pe_http_warm_unwinder and
 * pe_http_listen) under start_lock, so that a step aside sees either no
 * server or one it can stop.
 */
static void *
server_main(void *unused)
{
    pe_threads_mark_internal();
    /* Deferred start: a program that exits meanwhile ends this thread with
       the rest (exit_group), having bound nothing, written no file and not
       paid for libunwind's first walk. */
    if (start_not_before_ns) {
        struct timespec until = {start_not_before_ns / 1000000000,
                                 start_not_before_ns % 1000000000};
        while (sem_clockwait(&start_wake, CLOCK_MONOTONIC, &until) < 0 && errno == EINTR)
            ;
    }
    pthread_mutex_lock(&start_lock);
    if (!__atomic_load_n(&aside, __ATOMIC_ACQUIRE) && second_phase)
        second_phase();
    pthread_mutex_unlock(&start_lock);
    pe_threads_unregister(); /* its slot back (on_exit_thread says why) */
    __atomic_store_n(&server_live, 0, __ATOMIC_RELEASE);
    return NULL;
}

void
pe_http_warm_unwinder(void)
{
    /* Under warm_lock: a fork waits for the walk (pe_http_fork_prepare). */
    pthread_mutex_lock(&warm_lock);
    __atomic_store_n(&warm_running, 1, __ATOMIC_SEQ_CST);
    pe_unwind_warm();
    __atomic_store_n(&warm_running, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&warm_lock);
}

/*
 * A tree member that became the root takes the root's address (preload/tree.h,
 * succession): a socket bound there replaces, under the same descriptor
 * number, the one civetweb listens on, which it then polls and accepts from
 * (its master thread picks the new one up at its next poll, within 2 s).
 */
static int
take_port(const char *host, int port)
{
    struct sockaddr_in sa;
    int fd, one = 1, fl, err = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (listen_fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -EINVAL; /* IPv4 literals only (no IPv6 in this civetweb) */
    if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) /* ours: high, close-on-exec (fd.h) */
        return -errno;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((fl = fcntl(listen_fd, F_GETFL)) >= 0)
        (void)fcntl(fd, F_SETFL, fl); /* civetweb's listener's own mode */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
        err = -errno;
    else
        err = pe_fd_replace(listen_fd, fd);
    close(fd);
    if (err)
        return err;
    defer_accept(listen_fd);
    __atomic_store_n(&pe_http_port, port, __ATOMIC_RELAXED);
    return 0;
}

/*
 * civetweb started on ports (a buffer of len, "HOST:PORT[s]"), NULL when it could not
 * be.  When again (the port an earlier image announced) is taken meanwhile, any port
 * as PROFEP_ADDR says, written back into ports.  A member serves plain HTTP.
 */
static struct mg_context *
server_start(int member, int again, char *ports, size_t len)
{
    struct mg_context *ctx;
    struct mg_callbacks cb;
    const char *options[] = {
        "listening_ports",
        ports,
        /* Few workers: profiles hold one each for their duration (see routes.c's
           cap on long requests), quick endpoints keep the rest. */
        "num_threads",
        member ? PE_HTTP_MEMBER_WORKERS_STR : PE_HTTP_WORKERS_STR,
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
        /* A burst of a thousand scrapers is queued by the kernel, not
           dropped (a dropped SYN costs its client 1 s): each is then answered
           or refused at once (fanout.c, routes.c), and TCP_DEFER_ACCEPT keeps
           idle connections out of this queue. */
        "listen_backlog",
        "1024",
        "enable_auth_domain_check",
        "no",
        /* civetweb's own answers (400, 413 to malformed requests) too: ours
           set it themselves (respond.c). */
        "additional_header",
        "X-Content-Type-Options: nosniff",
        /* No document_root: nothing is ever served from disk. */
        tls_cert[0] ? "ssl_certificate" : NULL,
        tls_cert,
        NULL,
    };

    if (member)
        options[PE_ARRAY_SIZE(options) - 3] = NULL; /* no TLS */
    memset(&cb, 0, sizeof(cb));
    cb.log_message = on_log_message;
    cb.begin_request = on_begin_request;
    cb.init_thread = on_init_thread;
    cb.exit_thread = on_exit_thread;
    mg_init_library(0);
    ctx = mg_start(&cb, NULL, options);
    if (!ctx && again) { /* taken meanwhile: any port, as PROFEP_ADDR says */
        snprintf(ports, len, "%s:0%s", pe_cfg.host, tls_cert[0] ? "s" : "");
        ctx = mg_start(&cb, NULL, options);
    }
    return ctx;
}

/* The root is serving: its port file, its registry, and a line on stderr (when it is
   still the program's) saying where.  1 (pe_http_listen's). */
static int
root_served(void)
{
    const char *scheme = tls_cert[0] ? "https" : "http";

    write_port_file(pe_cfg.host, pe_http_port);
    pe_tree_served(pe_http_port); /* the root's registry */
    if (!pe_fd_stderr_same())
        return 1;
    if (!is_loopback(pe_cfg.host) && !pe_cfg.token[0])
        pe_log_warn("listening on non-loopback %s without PROFEP_TOKEN: anyone who can reach "
                    "it can read this process's memory layout and stacks",
                    pe_cfg.host);
    if (pe_http_port == pe_tree_announced_port()) /* an earlier image of this pid said so */
        pe_log_debug("serving %s://%s:%d (pid %d) again after exec", scheme, pe_cfg.host,
                     pe_http_port, (int)getpid());
    else
        pe_log_info("serving %s://%s:%d (pid %d)", scheme, pe_cfg.host, pe_http_port,
                    (int)getpid());
    return 1;
}

int
pe_http_listen(void)
{
    int member = pe_tree_member();
    char ports[160];
    struct mg_server_port sp[4];
    int n, again;

    /* A root that exec'd keeps the port its earlier image announced (tree.h) */
    again = !member && !pe_cfg.port ? pe_tree_announced_port() : 0;
    snprintf(ports, sizeof(ports), "%s:%d%s", pe_cfg.host, again ? again : pe_cfg.port,
             tls_cert[0] ? "s" : "");
    if (member) {
        /* A member of a process tree (preload/tree.h): loopback only, a port
           of its own, plain HTTP (the root proxies to it), nothing printed. */
        snprintf(ports, sizeof(ports), "127.0.0.1:0");
    }
    if (tls_cert[0] && !member && tls_prepare() < 0)
        return -ENOENT;
    /* Debian's civetweb 1.15 is built without IPv6 (it would refuse "[::1]:0"
       as an invalid port spec); say what is missing instead. */
    if (pe_cfg.host[0] == '[' && !mg_check_feature(8)) {
        if (pe_fd_stderr_same())
            pe_log_warn("PROFEP_ADDR=%s: this civetweb is built without IPv6; no server "
                        "(listen on 127.0.0.1:PORT instead)",
                        ports);
        return -EAFNOSUPPORT;
    }
    server_ctx = server_start(member, again, ports, sizeof(ports));
    if (!server_ctx) {
        if (member)
            return -EADDRINUSE;
        /* Lines from this thread go to fd 2 only if it is still what it was
           at load: a program may have put a data file there since. */
        if (port_held_by_ancestor(pe_cfg.port) || !pe_fd_stderr_same())
            return -EADDRINUSE;
        pe_log_warn("cannot listen on %s (%s); pid %d (%s) runs on without profiling; "
                    "target one process with PROFEP_MATCH=<program>, or give each its own port "
                    "with PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=/tmp/pe.%%p",
                    ports, bind_error[0] ? bind_error : "bind failed", (int)getpid(),
                    pe_cfg_progname());
        return -EADDRINUSE;
    }
    mg_set_request_handler(server_ctx, "/", pe_http_dispatch, NULL);
    __atomic_store_n(&handler_set, 1, __ATOMIC_RELEASE);
    n = mg_get_server_ports(server_ctx, (int)PE_ARRAY_SIZE(sp), sp);
    if (n > 0)
        pe_http_port = sp[0].port;
    listen_fd = find_listen_fd(pe_http_port);
    defer_accept(listen_fd);
    if (member) {
        pe_tree_take_port = take_port; /* should the root go (preload/tree.h) */
        pe_tree_served(pe_http_port);  /* its port file, and registration with the root */
        return 0;
    }
    return root_served();
}

int pe_http_port;

int
pe_http_start(void)
{
    return pe_http_start_after(0, second_phase);
}

int
pe_http_start_after(int delay_ms, void (*phase)(void))
{
    int err;

    if (__atomic_load_n(&aside, __ATOMIC_ACQUIRE))
        return -ECANCELED; /* this process must be alone (pe_http_step_aside) */
    /* What fd 2 is at load: the server thread's lines go nowhere else. */
    pe_fd_note_stderr();
    /* A fork child's server (tree.c) starts again after pe_http_atfork_child. */
    __atomic_store_n(&server_stopping, 0, __ATOMIC_RELEASE);
    pe_http_max_long = pe_tree_member() ? PE_HTTP_MEMBER_WORKERS - 1 : PE_HTTP_MAX_LONG;
    /* Read with every other setting, in the constructor (config.c). */
    snprintf(tls_cert, sizeof(tls_cert), "%s", pe_cfg.tls_cert);
    second_phase = phase;
    start_not_before_ns = delay_ms > 0 ? pe_clock_ns(CLOCK_MONOTONIC) + delay_ms * 1000000LL : 0;

    /* Every signal blocked: civetweb's threads inherit our mask (threads.h). */
    __atomic_store_n(&server_live, 1, __ATOMIC_RELEASE);
    if ((err = pe_threads_start_internal(server_main, NULL)) < 0) {
        __atomic_store_n(&server_live, 0, __ATOMIC_RELEASE);
        pe_log_warn("cannot start the server thread: %s", strerror(-err));
        return err;
    }
    return 0;
}

int
pe_http_step_aside(void)
{
    struct mg_context *ctx;
    int fd;

    /* Long handlers finish (as at exit), a deferred start never binds. */
    __atomic_store_n(&server_stopping, 1, __ATOMIC_RELEASE);
    if (__atomic_exchange_n(&aside, 1, __ATOMIC_ACQ_REL))
        return 0;
    sem_post(&start_wake);
    pthread_mutex_lock(&start_lock);
    ctx = server_ctx;
    server_ctx = NULL;
    __atomic_store_n(&handler_set, 0, __ATOMIC_RELEASE);
    fd = listen_fd;
    listen_fd = -1;
    pthread_mutex_unlock(&start_lock);
    /* a thread not yet run would otherwise outlive the wait */
    pe_clock_wait_cleared(&server_live, 5000);
    if (!ctx)
        return 0;
    /* civetweb's master polls its listener for up to 2 s between looks at
       its stop flag: a shut listener wakes it at once. */
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    mg_stop(ctx); /* joins the master and every worker */
    __atomic_store_n(&pe_http_port, 0, __ATOMIC_RELAXED);
    return 1;
}

/* After a detach (preload/attach.c): a later attach may start the server again. */
void
pe_http_rejoin(void)
{
    __atomic_store_n(&server_stopping, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&aside, 0, __ATOMIC_RELEASE);
}

/* How long the exit waits for profiles in flight to be sent (README "Exit"). */
#define PE_HTTP_EXIT_WAIT_MS 350

void
pe_http_shutdown(void)
{
    int64_t t0 = pe_clock_ns(CLOCK_MONOTONIC), until = t0 + PE_HTTP_EXIT_WAIT_MS * 1000000LL;
    struct timespec step = {0, 2 * 1000000L};
    int n = pe_http_long_count();

    __atomic_store_n(&server_stopping, 1, __ATOMIC_RELEASE);
    /* Profiles being recorded stop at their next step (20 ms), close their
       window, name their frames (names only at exit: respond.c) and send what
       they have: 40-250 ms measured with three in flight on a 2-core machine
       at load 20 (with source lines it was 0.5-2 s).  Give them that long, no
       more than this bound, before the process ends. */
    while (n > 0 && (n = pe_http_long_count()) > 0 && pe_clock_ns(CLOCK_MONOTONIC) < until)
        nanosleep(&step, NULL);
    if (n > 0)
        pe_log_debug("exit: %d requests still answering after %d ms", n, PE_HTTP_EXIT_WAIT_MS);
    else
        pe_log_debug("exit: waited %lld ms for the requests in flight",
                     (long long)((pe_clock_ns(CLOCK_MONOTONIC) - t0) / 1000000));
}

int
pe_http_stopping(void)
{
    return __atomic_load_n(&server_stopping, __ATOMIC_ACQUIRE);
}

void
pe_http_fork_prepare(void)
{
    struct timespec until;
    long long ns;

    /* Waits only while the server thread's first walk runs (~0.1-10 ms, once
       per process); bounded, so a stuck walk cannot hang the program's forks. */
    clock_gettime(CLOCK_MONOTONIC, &until);
    ns = until.tv_nsec + PE_HTTP_WARM_WAIT_NS;
    until.tv_sec += ns / 1000000000LL;
    until.tv_nsec = ns % 1000000000LL;
    fork_holds_warm = pthread_mutex_clocklock(&warm_lock, CLOCK_MONOTONIC, &until) == 0;
}

void
pe_http_fork_parent(void)
{
    if (fork_holds_warm)
        pthread_mutex_unlock(&warm_lock);
    fork_holds_warm = 0;
}

void
pe_http_atfork_child(void)
{
    /* No thread serves the listening socket in the child; close the child's
       copies of our sockets so that a daemon's surviving child does not keep
       the port bound (preload/fd.c: by their real numbers, never the program's). */
    pe_fd_atfork_child();
    /* The lock as new.  A walk under way at the fork (the wait ran out, or
       _Fork ran no prepare) may have held libunwind's init lock: this
       process must never call libunwind. */
    pthread_mutex_init(&warm_lock, NULL);
    pthread_mutex_init(&start_lock, NULL);
    server_live = 0;
    if (__atomic_load_n(&warm_running, __ATOMIC_SEQ_CST))
        pe_unwind_forsake();
    fork_holds_warm = warm_running = 0;
    listen_fd = -1;
    server_ctx = NULL;
    __atomic_store_n(&handler_set, 0, __ATOMIC_RELEASE);
    server_stopping = 1;
    pe_http_port = 0;
    /* What the parent's workers held at the fork (a tree member serves again). */
    pe_sym_atfork_child();
    pe_http_long_atfork_child();
    pe_http_fanout_atfork_child();
    pe_http_profile_atfork_child();
    pe_http_heap_atfork_child();
    pe_http_mutex_atfork_child();
    pe_http_engine_atfork_child();
}

int
pe_http_listening_port(void)
{
    return __atomic_load_n(&pe_http_port, __ATOMIC_RELAXED);
}

double
pe_http_max_seconds(void)
{
    return pe_cfg.max_seconds;
}
