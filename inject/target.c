/*
 * target.c: what /proc says about the target, read before anything is
 * touched: the refusals that need no ptrace (each one line), the objects
 * we need from its maps (libc, ld.so, our library), and which of its threads
 * may be stopped (waiting in a system call we know how to resume).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject.h"

/* The whole of a small /proc file into buf (NUL-terminated); bytes or -errno. */
static ssize_t
slurp(const char *path, char *buf, size_t len)
{
    ssize_t n, got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    while (got < (ssize_t)len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
        got += n;
    close(fd);
    buf[got] = '\0';
    return got;
}

static long
status_field(const char *status, const char *name)
{
    const char *p = strstr(status, name);
    return p ? strtol(p + strlen(name), NULL, 10) : -1;
}

static const char *
base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- the maps ---------------------------------------------------------------------- */

static void
note_mapping(pe_obj_t *o, uint64_t lo, uint64_t hi, uint64_t off, const char *perms,
             const char *path)
{
    if (!o->path[0] || strcmp(o->path, path) != 0) {
        if (o->path[0])
            return; /* a second copy: the first one counts */
        snprintf(o->path, sizeof(o->path), "%s", path);
    }
    if (off == 0 && (!o->base || lo < o->base)) {
        o->base = lo;
        o->start = lo;
        o->end = hi;
    }
    if (hi > o->span_hi)
        o->span_hi = hi;
    if (perms[2] == 'x') {
        if (!o->text_lo || lo < o->text_lo)
            o->text_lo = lo;
        if (hi > o->text_hi)
            o->text_hi = hi;
    }
}

int
pe_target_maps(pe_target_t *t, char *why)
{
    char path[64], line[1024], file[600], perms[8];
    unsigned long long lo, hi, off;
    FILE *f;

    memset(&t->libc, 0, sizeof(t->libc));
    memset(&t->ldso, 0, sizeof(t->ldso));
    memset(&t->lib, 0, sizeof(t->lib));
    t->have_lib = 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
    if (!(f = fopen(path, "re"))) {
        snprintf(why, PE_WHY_LEN, "cannot read %s: %s", path, strerror(errno));
        return -errno;
    }
    while (fgets(line, sizeof(line), f)) {
        file[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %599[^\n]", &lo, &hi, perms, &off, file) < 4 ||
            file[0] != '/')
            continue;
        const char *b = base_name(file);
        if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7) || !strncmp(b, "libc.musl", 9))
            note_mapping(&t->libc, lo, hi, off, perms, file);
        else if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7) || !strncmp(b, "ld.so", 5))
            note_mapping(&t->ldso, lo, hi, off, perms, file);
        else if (strstr(b, "libprofendpoints.so"))
            note_mapping(&t->lib, lo, hi, off, perms, file);
    }
    fclose(f);
    t->have_lib = t->lib.base != 0;
    return 0;
}

/* ---- refusals ---------------------------------------------------------------------- */

/* The process's state (/proc/PID/stat): not a kernel thread, a zombie, or stopped. */
static int
check_state(pid_t pid, char *why)
{
    char path[64], buf[8192];
    const char *p;
    unsigned long flags = 0;
    char state = '?';

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (slurp(path, buf, sizeof(buf)) < 0) {
        snprintf(why, PE_WHY_LEN, "no process %d", (int)pid);
        return -ESRCH;
    }
    /* state and flags follow the command name's closing parenthesis */
    if ((p = strrchr(buf, ')')) && sscanf(p + 2, "%c %*d %*d %*d %*d %*d %lu", &state, &flags) < 2)
        state = '?';
    if (flags & 0x00200000UL) { /* PF_KTHREAD */
        snprintf(why, PE_WHY_LEN, "pid %d is a kernel thread", (int)pid);
        return -EINVAL;
    }
    if (state == 'Z' || state == 'X') {
        snprintf(why, PE_WHY_LEN, "pid %d is a zombie (it has exited)", (int)pid);
        return -ESRCH;
    }
    if (state == 'T' || state == 't') {
        snprintf(why, PE_WHY_LEN,
                 "pid %d is stopped (state %c): left as it is; continue it (kill -CONT %d) "
                 "first",
                 (int)pid, state, (int)pid);
        return -EAGAIN;
    }
    return 0;
}

/* What /proc/PID/status says of it: no tracer, no seccomp, no shadow stack, ours to trace. */
static int
check_status(pid_t pid, char *why)
{
    char path[64], buf[8192];
    const char *p;
    long tracer, seccomp, uid;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (slurp(path, buf, sizeof(buf)) < 0) {
        snprintf(why, PE_WHY_LEN, "no process %d", (int)pid);
        return -ESRCH;
    }
    tracer = status_field(buf, "\nTracerPid:");
    seccomp = status_field(buf, "\nSeccomp:");
    uid = status_field(buf, "\nUid:");
    if (tracer > 0) {
        snprintf(why, PE_WHY_LEN,
                 "pid %d is already traced by pid %ld (a debugger or strace): detach it first",
                 (int)pid, tracer);
        return -EBUSY;
    }
    if (seccomp > 0) {
        snprintf(why, PE_WHY_LEN,
                 "pid %d runs under a seccomp %s: the system calls attach needs could kill it",
                 (int)pid, seccomp == 1 ? "strict mode" : "filter");
        return -EPERM;
    }
    /* A user-mode shadow stack (CET) would fault on the return of our one
       remote call, which no `call` pushed. */
    if ((p = strstr(buf, "\nx86_Thread_features:")) && strstr(p, "shstk") &&
        strstr(p, "shstk") < strchr(p + 1, '\n')) {
        snprintf(why, PE_WHY_LEN,
                 "pid %d runs with a shadow stack (CET): attach does not support it", (int)pid);
        return -ENOTSUP;
    }
    if (geteuid() != 0 && uid >= 0 && (uid_t)uid != geteuid()) {
        snprintf(why, PE_WHY_LEN,
                 "not permitted: pid %d belongs to uid %ld; run as root (or with CAP_SYS_PTRACE)",
                 (int)pid, uid);
        return -EPERM;
    }
    return 0;
}

/* Its program file: readable, and x86-64 when it is ELF. */
static int
check_program(pid_t pid, char *why)
{
    char path[64], exe[PATH_MAX];
    unsigned char ehdr[20];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    if (readlink(path, exe, sizeof(exe) - 1) < 0) {
        snprintf(why, PE_WHY_LEN,
                 errno == ENOENT ? "pid %d has no program file (a kernel thread?)"
                                 : "not permitted to read pid %d's program: run as root (or "
                                   "with CAP_SYS_PTRACE)",
                 (int)pid);
        return errno == ENOENT ? -EINVAL : -EPERM;
    }
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        n = read(fd, ehdr, sizeof(ehdr));
        close(fd);
        if (n == (ssize_t)sizeof(ehdr) && !memcmp(ehdr, "\177ELF", 4) &&
            (ehdr[4] != 2 || (ehdr[18] | ehdr[19] << 8) != 62)) {
            snprintf(why, PE_WHY_LEN, "pid %d is not an x86-64 program (attach supports x86-64)",
                     (int)pid);
            return -ENOTSUP;
        }
    }
    return 0;
}

/* Its loaded objects (t->ldso, t->libc): a dynamic glibc to load a library with. */
static int
check_libc(pe_target_t *t, pid_t pid, char *why)
{
    if (pe_target_maps(t, why) < 0)
        return -EPERM;
    if (!t->ldso.base && !t->libc.base) {
        snprintf(why, PE_WHY_LEN, "pid %d is statically linked: nothing to load a library with",
                 (int)pid);
        return -ENOTSUP;
    }
    if (strstr(t->libc.path, "musl") || strstr(t->ldso.path, "musl")) {
        snprintf(why, PE_WHY_LEN, "pid %d runs on musl libc; attach supports glibc 2.34 or newer",
                 (int)pid);
        return -ENOTSUP;
    }
    if (!t->libc.base || !t->libc.text_lo) {
        snprintf(why, PE_WHY_LEN, "pid %d has no glibc loaded (C library: %.200s)", (int)pid,
                 t->ldso.path[0] ? t->ldso.path : "unknown");
        return -ENOTSUP;
    }
    return 0;
}

int
pe_target_check(pe_target_t *t, pid_t pid, char *why)
{
    int rc;

    memset(t, 0, sizeof(*t));
    t->pid = pid;
    if (pid == getpid()) {
        snprintf(why, PE_WHY_LEN, "pid %d is profep itself", (int)pid);
        return -EINVAL;
    }
    if ((rc = check_state(pid, why)) < 0 || (rc = check_status(pid, why)) < 0 ||
        (rc = check_program(pid, why)) < 0 || (rc = check_libc(t, pid, why)) < 0)
        return rc;
    return 0;
}

/* ---- dependencies in the target's root ---------------------------------------------- */

int
pe_target_deps(const pe_target_t *t, const char *lib_path, char *why)
{
    static const char *const deps[] = {"libcivetweb.so.1", "libz.so.1"};
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu",
                                       "/usr/lib/x86_64-linux-gnu",
                                       "/lib64",
                                       "/usr/lib64",
                                       "/lib",
                                       "/usr/lib",
                                       "/usr/local/lib"};
    char path[PATH_MAX], dir[PATH_MAX];
    struct stat st;
    const char *slash = strrchr(lib_path, '/');

    for (size_t i = 0; i < sizeof(deps) / sizeof(deps[0]); i++) {
        int found = 0;
        for (size_t j = 0; !found && j < sizeof(dirs) / sizeof(dirs[0]); j++) {
            snprintf(path, sizeof(path), "/proc/%d/root%s/%s", (int)t->pid, dirs[j], deps[i]);
            found = stat(path, &st) == 0;
        }
        /* beside the library, when the target shares our root */
        if (!found && slash) {
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - lib_path), lib_path);
            snprintf(path, sizeof(path), "/proc/%d/root%.2000s/%s", (int)t->pid, dir, deps[i]);
            found = stat(path, &st) == 0;
        }
        if (!found) {
            snprintf(why, PE_WHY_LEN,
                     "pid %d's filesystem (its root or container) has no %s, which the library "
                     "needs: install it there (Debian: libcivetweb1, zlib1g)",
                     (int)t->pid, deps[i]);
            return -ENOENT;
        }
    }
    return 0;
}

int
pe_target_other_netns(pid_t pid)
{
    char a[64], b[64], path[64];
    ssize_t na, nb;

    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
    na = readlink(path, a, sizeof(a));
    nb = readlink("/proc/self/ns/net", b, sizeof(b));
    return na > 0 && nb > 0 && (na != nb || memcmp(a, b, (size_t)na) != 0);
}

/* ---- threads ---------------------------------------------------------------------------- */

int
pe_target_has_thread(pid_t pid, pid_t tid)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
    return stat(path, &st) == 0;
}

/* Rank of a thread waiting in system call nr: 1 best, 2 a futex, 0 not usable. */
static int
rank_call(long nr, unsigned long long uaddr, const pe_target_t *t)
{
    switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_pause:
    case SYS_rt_sigsuspend:
    case SYS_rt_sigtimedwait:
    case SYS_msgrcv:
    /* a nanosleep, poll or futex wait resumed after a stop (ours, say) */
    case SYS_restart_syscall:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
        return 1;
    case SYS_futex:
        /* a lock word inside libc or ld.so is one of glibc's own (malloc's
           arena, the loader's, the stack cache): that thread may hold another */
        if ((uaddr >= t->libc.base && uaddr < t->libc.span_hi + (256ULL << 10)) ||
            (t->ldso.base && uaddr >= t->ldso.base && uaddr < t->ldso.span_hi + (256ULL << 10)))
            return 0;
        /* nor the lock of one of malloc's other arenas: each sits at the
           start of a heap aligned to 64 MiB (glibc's HEAP_MAX_SIZE); a
           thread inside fork() waits there holding the arenas before it */
        if ((uaddr & ((64ULL << 20) - 1)) < 4096)
            return 0;
        return 2;
    default: return 0;
    }
}

int
pe_target_candidates(const pe_target_t *t, pid_t *tids, int n)
{
    char path[300], buf[512], comm[32];
    struct dirent *de;
    int count = 0, rank_of[4096];
    pid_t found[4096];
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
    if (!(d = opendir(path)))
        return 0;
    while ((de = readdir(d)) && count < 4096) {
        long nr;
        unsigned long long a1 = 0, sp, pc;
        const char *p;
        char state = '?';
        int r;

        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)t->pid, de->d_name);
        if (slurp(path, comm, sizeof(comm)) > 0 && !strncmp(comm, "profep-attach", 13))
            continue; /* a bootstrap thread of ours */
        snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)t->pid, de->d_name);
        if (slurp(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
            continue;
        state = p[2];
        if (state != 'S')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)t->pid, de->d_name);
        if (slurp(path, buf, sizeof(buf)) <= 0 ||
            sscanf(buf, "%ld %llx %*x %*x %*x %*x %*x %llx %llx", &nr, &a1, &sp, &pc) < 4)
            continue;
        if (nr < 0 || pc < t->libc.text_lo || pc >= t->libc.text_hi)
            continue;
        if (!(r = rank_call(nr, a1, t)))
            continue;
        found[count] = (pid_t)atoi(de->d_name);
        rank_of[count++] = r;
    }
    closedir(d);
    /* best rank first; the main thread last among equals (it is the one the
       program's own signals and reads most often wait on) */
    int k = 0;
    for (int want = 1; want <= 2; want++)
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < count && k < n; i++)
                if (rank_of[i] == want && ((found[i] == t->pid) == pass))
                    tids[k++] = found[i];
    return k;
}
