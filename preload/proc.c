/*
 * proc.c: the one /proc reader (proc.h).  Owns the parsing of stat lines, the
 * thread-state names and the task listing; what a caller makes of the
 * fields (a tree member's liveness, a sample's state label) stays with it.
 * Paths are built by hand and files read with plain system calls, so no
 * caller has to care whether it may allocate.
 *
 * Signal-safe: yes, but pe_proc_started and pe_proc_self_rss (sysconf),
 * the descriptor list (readlinkat), the socket table and the maps entries
 * (not needed there) and the name lookups by string.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd.h"
#include "proc.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* Our reads of /proc never pass through our own interposers: alone_tasks.c's
   open() takes a single-threaded caller's look at /proc/self/task for the
   program's, and steps aside (u_engine caught it).  The system call itself. */
static int
proc_open(const char *path, int flags)
{
    return pe_fd_open_high(path, flags); /* out of the program's way (fd.h, "Born low") */
}

/* A short look: open, one read of len - 1 bytes at most (NUL ended; none when
   len is 0), close, system calls only, all within fd.h's gate (the number is
   never the program's to close or reuse meanwhile, and no move is needed).
   The bytes read, or -errno; *opened says whether the open went through. */
static int
proc_peek(const char *path, int flags, char *buf, size_t len, int *opened)
{
    ssize_t n = 0;
    int fd, err = 0;

    pe_fd_born_begin();
    fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC);
    *opened = fd >= 0;
    if (fd < 0) {
        err = errno;
    } else {
        if (len) {
            do
                n = syscall(SYS_read, fd, buf, len - 1);
            while (n < 0 && errno == EINTR);
            err = errno;
        }
        syscall(SYS_close, fd);
    }
    pe_fd_born_end();
    if (fd < 0 || n < 0)
        return -err;
    if (len)
        buf[n] = '\0';
    return (int)n;
}

/* Append s to the path at *n (capacity cap, room kept for the NUL). */
static void
put_str(char *path, size_t cap, size_t *n, const char *s)
{
    while (*s && *n + 1 < cap)
        path[(*n)++] = *s++;
    path[*n] = '\0';
}

static void
put_int(char *path, size_t cap, size_t *n, long v)
{
    char d[24];
    int i = 0;

    if (v < 0) {
        put_str(path, cap, n, "-");
        v = -v;
    }
    do
        d[i++] = (char)('0' + v % 10);
    while ((v /= 10) && i < (int)sizeof(d));
    while (i > 0 && *n + 1 < cap)
        path[(*n)++] = d[--i];
    path[*n] = '\0';
}

/* /proc/<pid|self>[/task/<tid>]/<what> */
static void
proc_path(char *path, size_t cap, pid_t pid, pid_t tid, const char *what)
{
    size_t n = 0;

    put_str(path, cap, &n, "/proc/");
    if (pid > 0)
        put_int(path, cap, &n, pid);
    else
        put_str(path, cap, &n, "self");
    if (tid > 0) {
        put_str(path, cap, &n, "/task/");
        put_int(path, cap, &n, tid);
    }
    put_str(path, cap, &n, "/");
    put_str(path, cap, &n, what);
}

/* Skip to the start of the next space-separated field; NULL at the end. */
static const char *
next_field(const char *p)
{
    while (*p && *p != ' ')
        p++;
    while (*p == ' ')
        p++;
    return *p ? p : NULL;
}

static long long
parse_ll(const char *p)
{
    long long v = 0;
    int neg = *p == '-';

    p += neg;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    return neg ? -v : v;
}

/* ---- files ------------------------------------------------------------------------------ */

int
pe_proc_read(const char *path, char *buf, size_t len)
{
    int opened;

    return proc_peek(path, O_RDONLY, buf, len, &opened);
}

int
pe_proc_task_read(pid_t tid, const char *what, char *buf, size_t len)
{
    char path[64];
    int n, opened;

    proc_path(path, sizeof(path), 0, tid, what);
    n = proc_peek(path, O_RDONLY, buf, len, &opened);
    if (n < 0 && !opened)
        return n == -ENOENT ? -ESRCH : n;
    if (n < 0)
        return n == -ESRCH ? -ESRCH : -EIO;
    return n;
}

int
pe_proc_stat(pid_t pid, pid_t tid, pe_proc_stat_t *st)
{
    char path[64], buf[1024];
    const char *p;
    int n, f;

    proc_path(path, sizeof(path), pid, tid, "stat");
    if ((n = pe_proc_read(path, buf, sizeof(buf))) < 0)
        return n;
    /* The command name may hold spaces and ')': fields go on after the last ')'. */
    if (!(p = strrchr(buf, ')')) || p[1] != ' ' || !p[2])
        return -EINVAL;
    p += 2; /* field 3 */
    memset(st, 0, sizeof(*st));
    st->state = *p;
    for (f = 3; p && f < 22; f++) {
        if (!(p = next_field(p)))
            return -EINVAL;
        if (f + 1 == 4)
            st->ppid = (pid_t)parse_ll(p);
        else if (f + 1 == 14)
            st->utime = (unsigned long long)parse_ll(p);
        else if (f + 1 == 15)
            st->stime = (unsigned long long)parse_ll(p);
        else if (f + 1 == 20)
            st->num_threads = (long)parse_ll(p);
        else if (f + 1 == 22)
            st->starttime = (unsigned long long)parse_ll(p);
    }
    return 0;
}

pid_t
pe_proc_ppid(pid_t pid)
{
    pe_proc_stat_t st;

    return pe_proc_stat(pid, 0, &st) == 0 ? st.ppid : 0;
}

long
pe_proc_self_threads(void)
{
    char buf[2048];
    const char *p;
    long n = 0;

    if (pe_proc_read("/proc/self/status", buf, sizeof(buf)) <= 0 ||
        !(p = strstr(buf, "\nThreads:")))
        return 0;
    for (p += 9; *p == ' ' || *p == '\t'; p++)
        ;
    for (; *p >= '0' && *p <= '9'; p++)
        n = n * 10 + (*p - '0');
    return n;
}

/* The value after "\nKEY:" in a status file, hex (base 16) or decimal; -1 when absent. */
static int
status_field(const char *buf, const char *key, int base, unsigned long long *v)
{
    const char *p = buf;
    size_t k = strlen(key);

    for (; (p = strchr(p, '\n')); p++) {
        if (strncmp(p + 1, key, k) || p[1 + k] != ':')
            continue;
        for (p += 2 + k; *p == ' ' || *p == '\t'; p++)
            ;
        *v = 0;
        for (;; p++) {
            int d = *p >= '0' && *p <= '9'                 ? *p - '0'
                    : base == 16 && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                                           : -1;
            if (d < 0)
                return 0;
            *v = *v * (unsigned)base + (unsigned)d;
        }
    }
    return -1;
}

int
pe_proc_task_sigs(pid_t tid, pe_proc_sigs_t *out)
{
    char buf[4096];
    unsigned long long v;
    int n = pe_proc_task_read(tid, "status", buf, sizeof(buf));

    if (n < 0)
        return n;
    if (status_field(buf, "SigBlk", 16, &out->blocked) < 0 ||
        status_field(buf, "SigPnd", 16, &out->pending) < 0)
        return -EINVAL;
    out->seccomp = status_field(buf, "Seccomp", 10, &v) == 0 ? (int)v : -1;
    return 0;
}

int
pe_proc_self_seccomp(void)
{
    char buf[4096];
    unsigned long long v;

    if (pe_proc_read("/proc/self/status", buf, sizeof(buf)) <= 0 ||
        status_field(buf, "Seccomp", 10, &v) < 0)
        return -1;
    return (int)v;
}

uint64_t
pe_proc_self_rss(void)
{
    char buf[128];
    const char *p;
    long page = sysconf(_SC_PAGESIZE);

    /* size resident shared text lib data dt, in pages */
    if (pe_proc_read("/proc/self/statm", buf, sizeof(buf)) <= 0 || !(p = next_field(buf)) ||
        *p < '0' || *p > '9' || page <= 0)
        return 0;
    return (uint64_t)parse_ll(p) * (uint64_t)page;
}

int
pe_proc_self_fd_link(int fd, char *buf, size_t len)
{
    char path[48];
    size_t n = 0;
    ssize_t got;

    put_str(path, sizeof(path), &n, "/proc/self/fd/");
    put_int(path, sizeof(path), &n, fd);
    if (len < 2 || (got = readlink(path, buf, len - 1)) < 0)
        return len < 2 ? -EINVAL : -errno;
    buf[got] = '\0';
    return (int)got;
}

int
pe_proc_self_task_count(void)
{
    struct stat st;

    /* a directory's links: its entries' (one a thread) plus "." and ".." */
    if (stat("/proc/self/task", &st) < 0)
        return -errno;
    return (int)st.st_nlink - 2;
}

int
pe_proc_task_alive(pid_t tid)
{
    char path[64];
    int opened;

    proc_path(path, sizeof(path), 0, tid, "");
    (void)proc_peek(path, O_PATH | O_DIRECTORY, NULL, 0, &opened);
    return opened;
}

int
pe_proc_task_syscall(pid_t tid, long *nr)
{
    char buf[32]; /* the number is all we read: "NR a1 .. a6 SP PC", "-1 SP PC" or "running" */
    int n = pe_proc_task_read(tid, "syscall", buf, sizeof(buf));

    if (n < 0)
        return n;
    if (buf[0] < '0' || buf[0] > '9')
        return 0;
    *nr = (long)parse_ll(buf);
    return 1;
}

int
pe_proc_task_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *slices)
{
    char buf[128];
    const char *p, *q;
    int opened, n = pe_proc_task_read(tid, "schedstat", buf, sizeof(buf));

    if (n < 0) {
        /* the thread is gone, or its file never existed */
        if (n != -ESRCH)
            return n;
        (void)proc_peek("/proc/self/schedstat", O_PATH, NULL, 0, &opened);
        return opened ? -ESRCH : -ENOSYS;
    }
    /* run time, time waiting on a runqueue (changes without running), times on a CPU */
    *run_ns = (uint64_t)parse_ll(buf);
    p = next_field(buf);
    q = p ? next_field(p) : NULL;
    *slices = q ? (uint64_t)parse_ll(q) : 0;
    return 0;
}

int
pe_proc_pid_read(pid_t pid, const char *what, char *buf, size_t len)
{
    char path[64];

    proc_path(path, sizeof(path), pid, 0, what);
    return pe_proc_read(path, buf, len);
}

int
pe_proc_open(pid_t pid, const char *what)
{
    char path[64];
    int fd;

    proc_path(path, sizeof(path), pid, 0, what);
    return (fd = proc_open(path, O_RDONLY | O_CLOEXEC)) < 0 ? -errno : fd;
}

long long
pe_proc_btime(void)
{
    static long long btime; /* written once; every reader computes the same value */
    char buf[4096];
    const char *p;
    size_t keep = 0;
    ssize_t n;
    long long v = __atomic_load_n(&btime, __ATOMIC_RELAXED);
    int fd;

    if (v)
        return v;
    /* btime follows the CPU lines and the long intr line: read on, keeping a
       tail that may hold the start of the line we look for */
    if ((fd = proc_open("/proc/stat", O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    while ((n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
        n += (ssize_t)keep;
        buf[n] = '\0';
        if ((p = strstr(buf, "\nbtime ")) && strchr(p + 7, '\n')) {
            v = parse_ll(p + 7);
            __atomic_store_n(&btime, v, __ATOMIC_RELAXED);
            break;
        }
        keep = n > 64 ? 64 : (size_t)n;
        memmove(buf, buf + n - (ssize_t)keep, keep);
    }
    close(fd);
    return v;
}

long long
pe_proc_started(unsigned long long starttime)
{
    long long bt = pe_proc_btime();
    long hz = sysconf(_SC_CLK_TCK);

    return bt && hz > 0 ? bt + (long long)(starttime / (unsigned long long)hz) : 0;
}

/* ---- thread states ---------------------------------------------------------------------- */

/* Code order is the wall profile's label order: keep it (0 is "unknown"). */
static const struct {
    char letter;
    const char *name;
} states[PE_PROC_STATES] = {
    [PE_PROC_UNKNOWN] = {'?', "unknown"},   [PE_PROC_RUNNING] = {'R', "running"},
    [PE_PROC_SLEEPING] = {'S', "sleeping"}, [PE_PROC_DISK_SLEEP] = {'D', "disk-sleep"},
    [PE_PROC_STOPPED] = {'T', "stopped"},   [PE_PROC_TRACING_STOP] = {'t', "tracing-stop"},
    [PE_PROC_ZOMBIE] = {'Z', "zombie"},     [PE_PROC_DEAD] = {'X', "dead"},
    [PE_PROC_IDLE] = {'I', "idle"},
};

unsigned
pe_proc_state_code(char letter)
{
    for (unsigned i = 1; i < PE_PROC_STATES; i++)
        if (states[i].letter == letter)
            return i;
    return 0;
}

const char *
pe_proc_state_str(unsigned code)
{
    return states[code < PE_PROC_STATES ? code : 0].name;
}

unsigned
pe_proc_state_code_of(const char *name)
{
    for (unsigned i = 1; i < PE_PROC_STATES; i++)
        if (!strcmp(name, states[i].name))
            return i;
    return 0;
}

const char *
pe_proc_state_name(char letter)
{
    return pe_proc_state_str(pe_proc_state_code(letter));
}

const char *
pe_proc_thread_state(pid_t tid)
{
    pe_proc_stat_t st;

    return pe_proc_stat(0, tid, &st) == 0 ? pe_proc_state_name(st.state) : "unknown";
}

/* ---- the task list ---------------------------------------------------------------------- */

int
pe_proc_tasks_open(pe_proc_tasks_t *it)
{
    it->pos = it->end = 0;
    it->fd = proc_open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return it->fd < 0 ? -errno : 0;
}

/* The next entry of a directory of numbers (threads, descriptors), or -1 at the end. */
static long long
dir_next(pe_proc_tasks_t *it)
{
    for (;;) {
        if (it->pos >= it->end) {
            long n = syscall(SYS_getdents64, it->fd, it->buf, sizeof(it->buf));
            if (n <= 0)
                return -1;
            it->pos = 0;
            it->end = (int)n;
        }
        /* struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name */
        const char *d = it->buf + it->pos;
        unsigned short reclen;
        memcpy(&reclen, d + 16, sizeof(reclen));
        it->pos += reclen;
        if (d[19] >= '0' && d[19] <= '9') /* not . and .. */
            return parse_ll(d + 19);
    }
}

pid_t
pe_proc_tasks_next(pe_proc_tasks_t *it)
{
    long long tid;

    while ((tid = dir_next(it)) == 0)
        ;
    return tid > 0 ? (pid_t)tid : 0;
}

void
pe_proc_tasks_close(pe_proc_tasks_t *it)
{
    if (it->fd >= 0)
        close(it->fd);
    it->fd = -1;
}

int
pe_proc_self_exe(char *buf, size_t len)
{
    ssize_t n = len ? readlink("/proc/self/exe", buf, len - 1) : -1;

    if (n <= 0)
        return n < 0 && len ? -errno : -ENOENT;
    buf[n] = '\0';
    return (int)n;
}

const char *
pe_proc_self_exe_file(void)
{
    return "/proc/self/exe";
}

/* ---- descriptors and sockets ------------------------------------------------------ */

int
pe_proc_fds_open(pe_proc_fds_t *it, pid_t pid)
{
    char path[64];

    proc_path(path, sizeof(path), pid, 0, "fd");
    it->pos = it->end = 0;
    it->fd = proc_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return it->fd < 0 ? -errno : 0;
}

int
pe_proc_fds_next(pe_proc_fds_t *it)
{
    long long fd = dir_next(it);

    return fd >= 0 && fd <= 0x7fffffff ? (int)fd : -1;
}

int
pe_proc_fds_link(pe_proc_fds_t *it, int fd, char *buf, size_t len)
{
    char name[24];
    size_t n = 0;
    ssize_t got;

    put_int(name, sizeof(name), &n, fd);
    if (len < 2 || (got = readlinkat(it->fd, name, buf, len - 1)) < 0)
        return len < 2 ? -EINVAL : -errno;
    buf[got] = '\0';
    return (int)got;
}

void
pe_proc_fds_close(pe_proc_fds_t *it)
{
    pe_proc_tasks_close(it);
}

/* Hex digits at *s, *s moved past them. */
static uintptr_t parse_hex(const char **s);

/* Field i (from 0) of a line of space-separated fields; NULL when it has fewer. */
static const char *
field(const char *line, int i)
{
    const char *p = line;

    while (*p == ' ')
        p++;
    if (!*p)
        return NULL;
    while (i-- > 0 && p)
        p = next_field(p);
    return p;
}

int
pe_proc_tcp_listeners(int port, unsigned long *inodes, int max)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    pe_proc_lines_t it;
    const char *line, *p;
    int n = 0;

    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        if (pe_proc_lines_open(&it, tables[t]) < 0)
            continue;
        /* sl local(addr:port) remote(addr:port) st tx:rx tr:when retrnsmt uid timeout inode */
        while (n < max && (line = pe_proc_lines_next(&it)) != NULL) {
            unsigned long lport, state, inode;
            if (!(p = field(line, 0)) || *p < '0' || *p > '9') /* the heading */
                continue;
            if (!(p = field(line, 1)))
                continue;
            while (*p && *p != ' ' && *p != ':')
                p++;
            if (*p++ != ':')
                continue;
            lport = parse_hex(&p);
            if (!(p = field(line, 3)))
                continue;
            state = parse_hex(&p);
            if (!(p = field(line, 9)) || *p < '0' || *p > '9')
                continue;
            inode = (unsigned long)parse_ll(p);
            if (state == 0x0A && (int)lport == port && inode) /* 0x0A: TCP_LISTEN */
                inodes[n++] = inode;
        }
        pe_proc_lines_close(&it);
    }
    return n;
}

/* ---- any file, line by line ------------------------------------------------------- */

int
pe_proc_lines_open(pe_proc_lines_t *it, const char *path)
{
    it->pos = it->end = it->skip = 0;
    it->fd = proc_open(path, O_RDONLY | O_CLOEXEC);
    return it->fd < 0 ? -errno : 0;
}

char *
pe_proc_lines_next(pe_proc_lines_t *it)
{
    const int cap = (int)sizeof(it->buf) - 1; /* room for the NUL of a last, unended line */

    for (;;) {
        char *line = it->buf + it->pos, *nl = NULL;
        ssize_t n;

        for (char *c = line; c < it->buf + it->end; c++) /* memchr is not on the safe list */
            if (*c == '\n') {
                nl = c;
                break;
            }

        if (nl) {
            *nl = '\0';
            it->pos = (int)(nl + 1 - it->buf);
            if (!it->skip)
                return line;
            it->skip = 0; /* that was a cut line's tail */
            continue;
        }
        /* no whole line left: keep the partial one at the front and read on */
        memmove(it->buf, line, (size_t)(it->end - it->pos));
        it->end -= it->pos;
        it->pos = 0;
        if (it->end == cap) { /* a line longer than the buffer */
            it->buf[cap] = '\0';
            it->end = 0;
            if (it->skip)
                continue;
            it->skip = 1;
            return it->buf; /* read over only by the next call */
        }
        do
            n = read(it->fd, it->buf + it->end, (size_t)(cap - it->end));
        while (n < 0 && errno == EINTR);
        if (n <= 0) { /* the end: a last line without a newline still counts */
            if (it->end == 0 || it->skip)
                return NULL;
            it->buf[it->end] = '\0';
            it->pos = it->end;
            return it->buf;
        }
        it->end += (int)n;
    }
}

void
pe_proc_lines_close(pe_proc_lines_t *it)
{
    if (it->fd >= 0)
        close(it->fd);
    it->fd = -1;
}

/* ---- /proc/self/maps ---------------------------------------------------------------- */

int
pe_proc_maps_open(pe_proc_maps_t *it)
{
    return pe_proc_lines_open(&it->lines, "/proc/self/maps");
}

static uintptr_t
parse_hex(const char **s)
{
    uintptr_t v = 0;

    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 /* /proc/net/tcp */
                                       : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uintptr_t)d;
    }
}

/* "lo-hi perms": the pointer to perms with m->lo, m->hi, m->prot set, or NULL. */
static char *
maps_head(char *s, pe_proc_map_t *m)
{
    const char *p = s;

    m->lo = parse_hex(&p);
    if (*p++ != '-')
        return NULL;
    m->hi = parse_hex(&p);
    if (*p++ != ' ' || !p[0] || !p[1] || !p[2])
        return NULL;
    m->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
              (p[2] == 'x' ? PROT_EXEC : 0);
    return s + (p - s);
}

int
pe_proc_maps_next(pe_proc_maps_t *it, uintptr_t *lo, uintptr_t *hi, int *prot)
{
    pe_proc_map_t m;
    char *s;

    /* a cut line still starts with its addresses and permissions */
    while ((s = pe_proc_lines_next(&it->lines)) != NULL) {
        if (!maps_head(s, &m))
            continue;
        *lo = m.lo;
        *hi = m.hi;
        *prot = m.prot;
        return 1;
    }
    return 0;
}

int
pe_proc_maps_entry(pe_proc_maps_t *it, pe_proc_map_t *m)
{
    char *s;
    const char *p;
    int i;

    /* lo-hi perms offset dev inode   path */
    while ((s = pe_proc_lines_next(&it->lines)) != NULL) {
        if (!(s = maps_head(s, m)))
            continue;
        for (i = 0; i < 4 && s[i] && s[i] != ' '; i++)
            m->perms[i] = s[i];
        m->perms[i] = '\0';
        if (!(p = next_field(s)))
            continue;
        m->offset = parse_hex(&p);
        if (*p != ' ' || !(p = next_field(p)) || !(p = next_field(p)) || *p < '0' || *p > '9')
            continue;
        m->inode = (unsigned long)parse_ll(p);
        while (*p >= '0' && *p <= '9')
            p++;
        while (*p == ' ')
            p++;
        m->path = s + (p - s);
        return 1;
    }
    return 0;
}

char *
pe_proc_maps_line(pe_proc_maps_t *it)
{
    return pe_proc_lines_next(&it->lines);
}

void
pe_proc_maps_close(pe_proc_maps_t *it)
{
    pe_proc_lines_close(&it->lines);
}
