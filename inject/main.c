/*
 * main.c: profep-inject attach|detach PID (scripts/profep runs it; see
 * docs/ATTACH.md).  Order: every check that needs no ptrace (target.c);
 * then one thread stopped at a safe point (remote.c), in which only these
 * run: block signals, mmap our page, mprotect its code page, pthread_create
 * the bootstrap thread (stub.S), unblock; the thread is let go at once.
 * The bootstrap thread does the rest while the program runs: the memfd,
 * which we fill from here, dlopen, and the library's entry point, whose one
 * line we print.  The page goes with the bootstrap thread.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/attach.h"
#include "inject.h"
#include "stub.h"

extern const unsigned char pe_stub_start[], pe_stub_trap[], pe_stub_end[];
extern char **environ;

/* Where pthread_create writes the new thread's id (in the data page, past the reply). */
#define D_PTHREAD_T (D_OUT_REPLY + PE_STUB_REPLY_LEN + 16)
_Static_assert(D_PTHREAD_T + 8 <= PE_STUB_PAGE, "the data page holds everything");
_Static_assert(PE_STUB_REPLY_LEN == PE_ATTACH_REPLY_LEN, "one reply size");

/* How long we look for a thread at a safe point before refusing. */
#define PE_FIND_ROUNDS 100
#define PE_FIND_NAP_MS 20

static int stats; /* --stats: the stop's length on stderr (make bench) */

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int
fail(const char *why)
{
    printf("profendpoints: %s\n", why);
    return 1;
}

/* ---- the library file ----------------------------------------------------------------- */

static unsigned char *
read_file(const char *path, size_t *len)
{
    struct stat st;
    unsigned char *buf;
    size_t got = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1))) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
        got += (size_t)n;
    close(fd);
    *len = got;
    return buf;
}

/* ---- the injection ------------------------------------------------------------------------ */

typedef struct {
    uint64_t pthread_create, pthread_self, pthread_detach, dlopen, dlsym, dlerror, munmap;
} libc_syms_t;

static int
resolve_libc(const pe_target_t *t, libc_syms_t *s, char *why)
{
    s->pthread_create = pe_elf_sym(t->pid, &t->libc, "pthread_create");
    s->pthread_self = pe_elf_sym(t->pid, &t->libc, "pthread_self");
    s->pthread_detach = pe_elf_sym(t->pid, &t->libc, "pthread_detach");
    s->dlopen = pe_elf_sym(t->pid, &t->libc, "dlopen");
    s->dlsym = pe_elf_sym(t->pid, &t->libc, "dlsym");
    s->dlerror = pe_elf_sym(t->pid, &t->libc, "dlerror");
    s->munmap = pe_elf_sym(t->pid, &t->libc, "munmap");
    if (!s->munmap || !s->pthread_self) {
        snprintf(why, PE_WHY_LEN, "cannot read the symbols of pid %d's C library (%.200s)",
                 (int)t->pid, t->libc.path);
        return -ENOENT;
    }
    if (!s->dlopen || !s->pthread_create || !s->pthread_detach || !s->dlsym || !s->dlerror) {
        snprintf(why, PE_WHY_LEN,
                 "pid %d's C library (%.200s) is glibc older than 2.34 (dlopen and pthread_create "
                 "live elsewhere there); attach supports glibc 2.34 or newer",
                 (int)t->pid, t->libc.path);
        return -ENOTSUP;
    }
    return 0;
}

/* Stop a thread at a safe point: a few rounds over the candidates. */
static int
stop_one(pe_remote_t *r, const pe_target_t *t, char *why)
{
    pid_t tids[64];
    int rc;
    /* Tests: start at the Nth candidate, so that cycles stop every kind of
       waiting thread in turn (test/e2e/e2e_attach.sh). */
    const char *first = getenv("PROFEP_INJECT_THREAD");
    int skip = first ? atoi(first) : 0;

    for (int round = 0; round < PE_FIND_ROUNDS; round++) {
        int n = pe_target_candidates(t, tids, 64);
        for (int j = 0; j < n; j++) {
            int i = (j + (skip > 0 ? skip : 0)) % n;
            rc = pe_remote_stop(r, t->pid, tids[i], t, why);
            if (rc != -EAGAIN)
                return rc;
        }
        nap_ms(PE_FIND_NAP_MS);
    }
    snprintf(why, PE_WHY_LEN,
             "no thread of pid %d was waiting in a system call at a safe point for %d ms (all "
             "busy in user code, or in calls attach does not resume); left as it was, try again",
             (int)t->pid, PE_FIND_ROUNDS * PE_FIND_NAP_MS);
    return -EAGAIN;
}

/*
 * In the stopped thread: our page and the bootstrap thread.  On success the
 * thread is let go and *base is the page; on failure too (put back exactly)
 * unless the return is -EINTR/-EIO from remote.c, which let it go itself.
 */
static int
plant(pe_remote_t *r, const libc_syms_t *s, uint64_t entry, int op, const char *settings,
      uint64_t *base, char *why)
{
    unsigned char data[PE_STUB_PAGE];
    size_t code_len = (size_t)(pe_stub_end - pe_stub_start);
    uint64_t b, created;
    long ret;
    int rc;

    if ((rc = pe_remote_mask(r, why)) < 0)
        return rc;
    if ((rc = pe_remote_syscall(r, SYS_mmap, 0, PE_STUB_LEN, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0, &ret, why)) < 0)
        return rc;
    if (ret < 0 && ret > -4096) {
        snprintf(why, PE_WHY_LEN, "mmap in pid %d: %s", (int)r->pid, strerror((int)-ret));
        pe_remote_release(r, why);
        return -ENOMEM;
    }
    b = (uint64_t)ret;
    memset(data, 0, sizeof(data));
#define PUT64(off, v) (*(uint64_t *)(data + (off)) = (v))
#define PUT32(off, v) (*(uint32_t *)(data + (off)) = (uint32_t)(v))
    PUT64(D_IN_PTHREAD_SELF, s->pthread_self);
    PUT64(D_IN_PTHREAD_DETACH, s->pthread_detach);
    PUT64(D_IN_DLOPEN, s->dlopen);
    PUT64(D_IN_DLSYM, s->dlsym);
    PUT64(D_IN_DLERROR, s->dlerror);
    PUT64(D_IN_MUNMAP, s->munmap);
    PUT64(D_IN_ENTRY, entry);
    PUT64(D_IN_BASE, b);
    PUT64(D_IN_LEN, PE_STUB_LEN);
    PUT32(D_IN_OP, op);
    PUT64(D_IN_TS, 0);
    PUT64(D_IN_TS + 8, 1000000);
    snprintf((char *)data + D_IN_NAME, 16, "%s", PE_ATTACH_THREAD_NAME);
    snprintf((char *)data + D_IN_MEMFD_NAME, 32, "libprofendpoints.so");
    snprintf((char *)data + D_IN_SYM, 32, "%s", op ? PE_DETACH_SYM : PE_ATTACH_SYM);
    snprintf((char *)data + D_IN_SETTINGS, PE_STUB_SETTINGS_LEN, "%s", settings);
    if (pe_mem_write(r->memfd, b, pe_stub_start, code_len) < 0 ||
        pe_mem_write(r->memfd, b + PE_STUB_DATA, data, sizeof(data)) < 0 ||
        pe_remote_syscall(r, SYS_mprotect, b, PE_STUB_PAGE, PROT_READ | PROT_EXEC, 0, 0, 0, &ret,
                          why) < 0 ||
        ret != 0) {
        if (!why[0])
            snprintf(why, PE_WHY_LEN, "cannot prepare our page in pid %d", (int)r->pid);
        goto err_unmap;
    }
    rc = pe_remote_call(r, s->pthread_create, b + PE_STUB_LEN,
                        b + (uint64_t)(pe_stub_trap - pe_stub_start),
                        b + PE_STUB_DATA + D_PTHREAD_T, 0, b, b + PE_STUB_DATA, &created, why);
    if (rc < 0)
        return rc; /* remote.c put it back (or it is gone) */
    if (created != 0) {
        snprintf(why, PE_WHY_LEN, "pthread_create in pid %d: %s", (int)r->pid,
                 strerror((int)created));
        goto err_unmap;
    }
    *base = b;
    return pe_remote_release(r, why);

err_unmap:
    (void)pe_remote_syscall(r, SYS_munmap, b, PE_STUB_LEN, 0, 0, 0, 0, &ret, why);
    pe_remote_release(r, why);
    return -EIO;
}

static int
read32(int memfd, uint64_t addr, int32_t *v)
{
    return pe_mem_read(memfd, addr, v, 4);
}

/* Wait (bounded) for a 32-bit flag in the data page to become nonzero. */
static int
wait_flag(int memfd, uint64_t addr, int ms)
{
    int32_t v = 0;
    for (int i = 0; i < ms; i++) {
        if (read32(memfd, addr, &v) < 0)
            return -ESRCH;
        if (v)
            return 0;
        nap_ms(1);
    }
    return -ETIMEDOUT;
}

/* The library's bytes into the memfd the bootstrap thread in t made (its
   number at data + D_OUT_MEMFD), then its path and the go. */
static int
send_library(const pe_target_t *t, int memfd_mem, uint64_t data, const unsigned char *file,
             size_t file_len, char *why)
{
    char path[64];
    int32_t memfd = -1, go;
    int fd, ok;

    if (wait_flag(memfd_mem, data + D_OUT_FDREADY, 10000) < 0 ||
        read32(memfd_mem, data + D_OUT_MEMFD, &memfd) < 0 || memfd < 0) {
        snprintf(why, PE_WHY_LEN, "the bootstrap thread in pid %d could not make a memfd",
                 (int)t->pid);
        return -EIO;
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pid, (int)memfd);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    ok = fd >= 0 && write(fd, file, file_len) == (ssize_t)file_len;
    if (fd >= 0)
        close(fd);
    go = ok ? 1 : 2;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)memfd);
    pe_mem_write(memfd_mem, data + D_IN_PATH, path, strlen(path) + 1);
    pe_mem_write(memfd_mem, data + D_GO, &go, 4);
    if (!ok) {
        snprintf(why, PE_WHY_LEN, "cannot write the library into pid %d's memfd", (int)t->pid);
        return -EIO;
    }
    return 0;
}

/* The stub's answer: its code, the serving thread's tid, the reply line, or
   why the load failed. */
static int
read_answer(const pe_target_t *t, int memfd_mem, uint64_t data, char *reply, int32_t *tid,
            char *why)
{
    int32_t rc32 = 0;

    if (wait_flag(memfd_mem, data + D_OUT_DONE, PE_STUB_WAIT_NAPS - 1000) < 0) {
        snprintf(why, PE_WHY_LEN, "pid %d did not answer within %d s", (int)t->pid,
                 (PE_STUB_WAIT_NAPS - 1000) / 1000);
        return -ETIMEDOUT;
    }
    read32(memfd_mem, data + D_OUT_RC, &rc32);
    read32(memfd_mem, data + D_OUT_TID, tid);
    pe_mem_read(memfd_mem, data + D_OUT_REPLY, reply, PE_STUB_REPLY_LEN);
    reply[PE_STUB_REPLY_LEN - 1] = '\0';
    if (rc32 == PE_STUB_RC_DLERROR) {
        uint64_t e = 0;
        char msg[400] = "";
        pe_mem_read(memfd_mem, data + D_OUT_DLERR, &e, 8);
        if (e)
            pe_mem_read(memfd_mem, e, msg, sizeof(msg) - 1);
        msg[sizeof(msg) - 1] = '\0';
        snprintf(why, PE_WHY_LEN, "pid %d cannot load the library: %s", (int)t->pid,
                 msg[0] ? msg : "dlopen failed");
        return -ENOENT;
    }
    if (rc32 == PE_STUB_RC_NOGO) {
        snprintf(why, PE_WHY_LEN, "the bootstrap thread in pid %d gave up", (int)t->pid);
        return -EIO;
    }
    return rc32;
}

static int
inject(const pe_target_t *t, const char *lib_path, uint64_t entry, int op, const char *settings,
       char *reply, char *why)
{
    pe_remote_t r;
    libc_syms_t s;
    sigset_t all, saved;
    uint64_t base = 0, data;
    unsigned char *file = NULL;
    size_t file_len = 0;
    int32_t tid = 0;
    int64_t t0, t1;
    int rc;
    char path[64];

    if ((rc = resolve_libc(t, &s, why)) < 0)
        return rc;
    if (!entry && !(file = read_file(lib_path, &file_len))) {
        snprintf(why, PE_WHY_LEN, "cannot read %.200s: %s", lib_path, strerror(errno));
        return -ENOENT;
    }
    memset(&r, 0, sizeof(r));
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
    if ((r.memfd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        snprintf(why, PE_WHY_LEN, "not permitted to write pid %d's memory: %s", (int)t->pid,
                 strerror(errno));
        free(file);
        return -EPERM;
    }
    /* Nothing may end us while a thread of the target is ours. */
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &saved);
    t0 = now_ns();
    rc = stop_one(&r, t, why);
    if (rc == 0)
        rc = plant(&r, &s, entry, op, settings, &base, why);
    t1 = now_ns();
    sigprocmask(SIG_SETMASK, &saved, NULL);
    if (stats && base)
        fprintf(
            stderr,
            "profep-inject: thread %d of pid %d stopped for %lld us (%lld us with the search)\n",
            (int)r.tid, (int)t->pid,
            (long long)((r.t_go.tv_sec - r.t_stop.tv_sec) * 1000000LL +
                        (r.t_go.tv_nsec - r.t_stop.tv_nsec) / 1000),
            (long long)((t1 - t0) / 1000));
    if (rc < 0 || !base)
        goto out;
    data = base + PE_STUB_DATA;
    /* The first attach: fill the memfd the bootstrap thread made, then say go. */
    if (!entry && (rc = send_library(t, r.memfd, data, file, file_len, why)) < 0)
        goto out;
    rc = read_answer(t, r.memfd, data, reply, &tid, why);
out:
    if (base) {
        int32_t one = 1;
        pe_mem_write(r.memfd, base + PE_STUB_DATA + D_ACK, &one, 4);
        /* gone with its page before we return: the next attach finds nothing of it */
        for (int i = 0; tid > 0 && i < 5000 && pe_target_has_thread(t->pid, tid); i++)
            nap_ms(1);
    }
    close(r.memfd);
    free(file);
    return rc;
}

/* ---- settings and arguments ------------------------------------------------------------- */

static int
settings_from_env(char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (char **e = environ; *e; e++) {
        size_t n = strlen(*e);
        if (strncmp(*e, "PROFEP_", 7) != 0 || !strncmp(*e, "PROFEP_TREE=", 12) ||
            !strncmp(*e, "PROFEP_INJECT", 13))
            continue;
        if (used + n + 2 > len)
            return -E2BIG;
        memcpy(out + used, *e, n);
        used += n;
        out[used++] = '\n';
        out[used] = '\0';
    }
    return 0;
}

static int
usage(void)
{
    fprintf(stderr, "usage: profep-inject [--stats] [--children] attach|detach PID --lib PATH\n"
                    "  the settings are the PROFEP_* variables of this command's environment\n");
    return 2;
}

/*
 * Attach to or detach from one process: every check, then the injection.
 * 0 with the library's line in reply (rc 1 from the library: nothing to do
 * is 0 too), or -errno with why.
 */
static int
one(pid_t pid, int op, const char *lib, const char *settings, char *reply, char *why)
{
    pe_target_t t;
    uint64_t entry = 0;
    int rc;

    reply[0] = why[0] = '\0';
    if ((rc = pe_target_check(&t, pid, why)) < 0)
        return rc;
    if (op == 1 && !t.have_lib) {
        snprintf(reply, PE_STUB_REPLY_LEN, "pid %d does not carry the library: nothing to detach",
                 (int)pid);
        return 0;
    }
    if (t.have_lib) {
        entry = pe_elf_sym(t.pid, &t.lib, op ? PE_DETACH_SYM : PE_ATTACH_SYM);
        if (!entry) {
            snprintf(why, PE_WHY_LEN,
                     "pid %d carries a build of the library without %s (%.200s); restart it to "
                     "change builds",
                     (int)pid, op ? "detach" : "attach", t.lib.path);
            return -ENOTSUP;
        }
    } else if ((rc = pe_target_deps(&t, lib, why)) < 0) {
        return rc;
    }
    rc = inject(&t, lib, entry, op, settings, reply, why);
    if (rc < 0 && !why[0])
        snprintf(why, PE_WHY_LEN, "%s", reply[0] ? reply : "failed");
    return rc < 0 ? rc : 0;
}

/* The live descendants of pid, parents before children (at most n). */
static int
descendants(pid_t pid, pid_t *out, int n)
{
    static pid_t ppid_of[1 << 22];
    pid_t all[65536];
    int nall = 0, k = 0;
    struct dirent *de;
    DIR *d = opendir("/proc");

    if (!d)
        return 0;
    while ((de = readdir(d)) && nall < (int)(sizeof(all) / sizeof(all[0]))) {
        char path[64], buf[512], *p;
        int fd;
        ssize_t len;
        long q = strtol(de->d_name, &p, 10), pp;

        if (*p || q <= 0 || q >= (1 << 22))
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/stat", q);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        if (!(p = strrchr(buf, ')')) || sscanf(p + 2, "%*c %ld", &pp) != 1)
            continue;
        ppid_of[q] = (pid_t)pp;
        all[nall++] = (pid_t)q;
    }
    closedir(d);
    /* breadth first from pid */
    for (int head = -1; head < k; head++) {
        pid_t parent = head < 0 ? pid : out[head];
        for (int i = 0; i < nall && k < n; i++)
            if (ppid_of[all[i]] == parent && all[i] != pid)
                out[k++] = all[i];
    }
    return k;
}

int
main(int argc, char **argv)
{
    const char *op_name = NULL, *pid_s = NULL, *lib = NULL;
    char why[PE_WHY_LEN] = "", reply[PE_STUB_REPLY_LEN] = "", settings[PE_STUB_SETTINGS_LEN];
    char root_reply[PE_STUB_REPLY_LEN];
    pid_t kids[256];
    int op, rc, children = 0, nkids, joined = 0;
    unsigned long long nonce = 0;
    long pid;
    char *end;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stats"))
            stats = 1;
        else if (!strcmp(argv[i], "--children"))
            children = 1;
        else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
            lib = argv[++i];
        else if (!op_name)
            op_name = argv[i];
        else if (!pid_s)
            pid_s = argv[i];
        else
            return usage();
    }
    if (!op_name || !pid_s || !lib)
        return usage();
    if (!strcmp(op_name, "attach"))
        op = 0;
    else if (!strcmp(op_name, "detach"))
        op = 1;
    else
        return usage();
    errno = 0;
    pid = strtol(pid_s, &end, 10);
    if (!isdigit((unsigned char)pid_s[0]) || *end || errno || pid <= 0 || pid > 0x3fffffff) {
        snprintf(why, sizeof(why), "'%s' is not a process id", pid_s);
        return fail(why);
    }
    if (settings_from_env(settings, sizeof(settings)) < 0)
        return fail("the PROFEP_* settings are too long");
    /* --children: the tree's key (preload/tree.h), given to the root and to
       every descendant, which serve through the root's address */
    if (children && op == 0) {
        size_t used = strlen(settings);
        if (syscall(SYS_getrandom, &nonce, sizeof(nonce), 0) != (long)sizeof(nonce))
            nonce = (unsigned long long)now_ns() ^ ((unsigned long long)getpid() << 32);
        if (snprintf(settings + used, sizeof(settings) - used, "PROFEP_TREE=%ld:%016llx\n", pid,
                     nonce) >= (int)(sizeof(settings) - used))
            return fail("the PROFEP_* settings are too long");
    }
    if ((rc = one((pid_t)pid, op, lib, settings, reply, why)) < 0)
        return fail(why);
    snprintf(root_reply, sizeof(root_reply), "%s", reply);
    if (!children) {
        if (op == 0 && pe_target_other_netns((pid_t)pid))
            printf("profendpoints: %s; that address is in its own network namespace (profep "
                   "cpu|heap|... --pid %ld reaches it)\n",
                   root_reply, pid);
        else
            printf("profendpoints: %s\n", root_reply);
        return 0;
    }
    nkids = descendants((pid_t)pid, kids, (int)(sizeof(kids) / sizeof(kids[0])));
    for (int i = 0; i < nkids; i++) {
        if (one(kids[i], op, lib, settings, reply, why) < 0)
            fprintf(stderr, "profendpoints: descendant %d: %s\n", (int)kids[i], why);
        else
            joined++;
    }
    printf("profendpoints: %s; %d of %d descendants %s\n", root_reply, joined, nkids,
           op == 0 ? "joined (GET /debug/pprof/processes)" : "detached");
    return 0;
}
