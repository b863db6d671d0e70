/*
 * proc.h: the one reader of /proc for every module: a process's or a
 * thread's stat fields, a thread's other files (status: signals, seccomp;
 * syscall; schedstat), the thread list of /proc/self/task, a process's
 * descriptors, the sockets listening on a port, /proc/self/maps as parsed
 * entries, the names of the state letters, and the boot time.  A module that
 * needs another file of /proc adds a reader here.
 *
 * Nothing here allocates or locks: paths are formatted by hand into the
 * caller's stack, files are read with one open/read/close, directories with
 * getdents64 into a buffer inside the caller's iterator.  The one cached
 * value (the boot time) is written once with an atomic store.  Callers range
 * from the server's and collector's threads to the fork child's safe point;
 * none is a signal handler today, but all of this could be.
 *
 * Signal-safe: yes (open, read, close, getdents64 and hand formatting only),
 * but what is not marked PE_SIGSAFE (sysconf, readlinkat, the name lookups).
 */
#ifndef PE_PROC_H
#define PE_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pe.h"

/* The fields of /proc/PID/stat (or .../task/TID/stat) that we use. */
typedef struct pe_proc_stat_s {
    char state;                   /* field 3: R, S, D, T, t, Z, X, I */
    pid_t ppid;                   /* field 4 */
    unsigned long long utime;     /* field 14: user CPU, clock ticks */
    unsigned long long stime;     /* field 15: system CPU, clock ticks */
    long num_threads;             /* field 20 */
    unsigned long long starttime; /* field 22: clock ticks after boot, tells pid reuse apart */
} pe_proc_stat_t;

/*
 * Read the file at path into buf (at most len - 1 bytes, NUL-terminated).
 * The length, -ENOENT when it does not exist, or -errno.
 */
PE_SIGSAFE int pe_proc_read(const char *path, char *buf, size_t len);
/*
 * Read /proc/self/task/<tid>/<what> into buf (at most len - 1 bytes,
 * NUL-terminated).  The length, -ESRCH when the thread is gone, or -errno.
 */
PE_SIGSAFE int pe_proc_task_read(pid_t tid, const char *what, char *buf, size_t len);
/*
 * Parse /proc/<pid>/stat (tid 0) or /proc/<pid>/task/<tid>/stat (pid 0: self)
 * into *st.  The command name may hold spaces and ')': the fields are counted
 * after the last ')'.  0, or -errno (-ENOENT when gone, -EINVAL when the line
 * does not parse).
 */
PE_SIGSAFE int pe_proc_stat(pid_t pid, pid_t tid, pe_proc_stat_t *st);
/*
 * The number of threads of this process, from /proc/self/status (0 when
 * unreadable).  Not from /proc/self/stat: reading that one sums every
 * thread's CPU time in the kernel, 6 ms a read at 30,000 threads.
 */
PE_SIGSAFE long pe_proc_self_threads(void);
/*
 * A thread's signal mask and filter, from /proc/self/task/<tid>/status
 * (readable by the process itself even when it is not dumpable): whether it
 * blocks a signal, has one pending, runs under a seccomp filter.
 */
typedef struct pe_proc_sigs_s {
    unsigned long long blocked; /* SigBlk: bit n-1 for signal n */
    unsigned long long pending; /* SigPnd: the thread's own pending set */
    int seccomp;                /* Seccomp: 0 none, 1 strict, 2 filter; -1 not shown */
} pe_proc_sigs_t;
/* Fill *out for tid.  0, -ESRCH when the thread is gone, -EINVAL when unparsable, or -errno. */
PE_SIGSAFE int pe_proc_task_sigs(pid_t tid, pe_proc_sigs_t *out);
/* The parent of pid, or 0 when it is gone or unreadable. */
PE_SIGSAFE pid_t pe_proc_ppid(pid_t pid);
/* "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 filter; -1 when not shown. */
PE_SIGSAFE int pe_proc_self_seccomp(void);
/* The resident set of this process in bytes (/proc/self/statm); 0 when unreadable. */
uint64_t pe_proc_self_rss(void);
/* 1 while thread tid of this process is listed in /proc/self/task, else 0. */
PE_SIGSAFE int pe_proc_task_alive(pid_t tid);
/* What this process's descriptor fd refers to ("anon_inode:[perf_event]", a
   path) into buf[len]: its length, or -errno (gone, no /proc). */
PE_SIGSAFE int pe_proc_self_fd_link(int fd, char *buf, size_t len);
/* How many threads this process has, from /proc/self/task's link count (one
   stat, no listing); -errno without /proc. */
int pe_proc_self_task_count(void);
/*
 * The system call thread tid waits in (/proc/self/task/<tid>/syscall): 1
 * with its number in *nr, 0 when it runs or waits outside a system call, or
 * -errno (-ESRCH when the thread is gone).
 */
PE_SIGSAFE int pe_proc_task_syscall(pid_t tid, long *nr);
/*
 * A thread's schedstat (/proc/self/task/<tid>/schedstat): its time on a CPU
 * in ns and how many times it got one.  0, -ESRCH when the thread is gone,
 * -ENOSYS when the kernel keeps no schedstat (CONFIG_SCHED_INFO), or -errno.
 */
PE_SIGSAFE int pe_proc_task_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *slices);
/*
 * Read /proc/<pid>/<what> (pid 0: self) into buf (at most len - 1 bytes,
 * NUL-terminated): its length, or -errno.
 */
PE_SIGSAFE int pe_proc_pid_read(pid_t pid, const char *what, char *buf, size_t len);
/* Open /proc/<pid>/<what> (pid 0: self) to read it in pieces: a descriptor, or -errno. */
PE_SIGSAFE int pe_proc_open(pid_t pid, const char *what);

/*
 * The boot time in seconds since the epoch (/proc/stat's btime, read once),
 * or 0 when unknown.
 */
PE_TESTONLY PE_SIGSAFE long long pe_proc_btime(void);
/* Wall-clock seconds since the epoch of a stat starttime (field 22); 0 when unknown. */
long long pe_proc_started(unsigned long long starttime);

/*
 * Thread states.  The letters of /proc/PID/stat get small codes (0 is
 * "unknown") so that a sample can carry one in a byte; each code has a name
 * ("running", "sleeping", "disk-sleep", "stopped", "tracing-stop", "zombie",
 * "dead", "idle").
 */
enum {
    PE_PROC_UNKNOWN,
    PE_PROC_RUNNING,      /* R */
    PE_PROC_SLEEPING,     /* S */
    PE_PROC_DISK_SLEEP,   /* D */
    PE_PROC_STOPPED,      /* T */
    PE_PROC_TRACING_STOP, /* t */
    PE_PROC_ZOMBIE,       /* Z */
    PE_PROC_DEAD,         /* X */
    PE_PROC_IDLE,         /* I */
    PE_PROC_STATES
};
PE_TESTONLY PE_SIGSAFE unsigned pe_proc_state_code(char letter);
/* The name of a code; "unknown" for 0 and out of range. */
PE_SIGSAFE const char *pe_proc_state_str(unsigned code);
/* The code of a name given by pe_proc_state_str (0 when none). */
unsigned pe_proc_state_code_of(const char *name);
/* The name of a state letter ('R' -> "running"; "unknown"). */
PE_SIGSAFE const char *pe_proc_state_name(char letter);
/* The state of thread tid of this process, named; "unknown" when it cannot be read. */
const char *pe_proc_thread_state(pid_t tid);

/*
 * The threads of this process, from /proc/self/task:
 *     pe_proc_tasks_t it;
 *     if (pe_proc_tasks_open(&it) == 0) {
 *         while ((tid = pe_proc_tasks_next(&it)) > 0) ...
 *         pe_proc_tasks_close(&it);
 *     }
 * The iterator lives on the caller's stack (4 KiB); a thread that starts or
 * exits during the listing may or may not be seen.
 */
typedef struct pe_proc_tasks_s {
    int fd;
    int pos, end;
    char buf[4096] __attribute__((aligned(8)));
} pe_proc_tasks_t;

PE_NODISCARD PE_SIGSAFE int pe_proc_tasks_open(pe_proc_tasks_t *it);
/* The next thread id, or 0 at the end (or on a read error). */
PE_SIGSAFE pid_t pe_proc_tasks_next(pe_proc_tasks_t *it);
PE_SIGSAFE void pe_proc_tasks_close(pe_proc_tasks_t *it);

/* The main program's path (/proc/self/exe's link) into buf[len]; its length, or -errno. */
PE_SIGSAFE int pe_proc_self_exe(char *buf, size_t len);
/* A path that opens the main program's file even when it was replaced or deleted on disk. */
const char *pe_proc_self_exe_file(void);

/*
 * The open descriptors of a process, from /proc/<pid>/fd (pid 0: self):
 *     pe_proc_fds_t it;
 *     if (pe_proc_fds_open(&it, 0) == 0) {
 *         while ((fd = pe_proc_fds_next(&it)) >= 0) ...
 *         pe_proc_fds_close(&it);
 *     }
 * The listing's own descriptor is among them in this process.
 */
typedef pe_proc_tasks_t pe_proc_fds_t;

PE_NODISCARD int pe_proc_fds_open(pe_proc_fds_t *it, pid_t pid);
/* The next descriptor, or -1 at the end (or on a read error). */
int pe_proc_fds_next(pe_proc_fds_t *it);
/* What descriptor fd of the listed process refers to ("socket:[123]", a path) into buf[len]: its
 * length, or -errno. */
int pe_proc_fds_link(pe_proc_fds_t *it, int fd, char *buf, size_t len);
void pe_proc_fds_close(pe_proc_fds_t *it);

/*
 * The inodes of the TCP sockets (IPv4 and IPv6, /proc/net/tcp, tcp6) that
 * listen on port, at most max of them into inodes: how many.
 */
int pe_proc_tcp_listeners(int port, unsigned long *inodes, int max);

/*
 * A file of /proc line by line (/proc/self/maps):
 *     pe_proc_lines_t it;
 *     char *line;
 *     if (pe_proc_lines_open(&it, path) == 0) {
 *         while ((line = pe_proc_lines_next(&it)) != NULL) ...
 *         pe_proc_lines_close(&it);
 *     }
 * Each line comes without its newline, NUL-terminated, writable, valid until
 * the next call.  The iterator lives on the caller's stack (8 KiB); a line
 * longer than 8191 bytes comes cut to that and its tail is skipped.
 */
typedef struct pe_proc_lines_s {
    int fd;
    int pos, end; /* unread bytes: buf[pos, end) */
    int skip;     /* the tail of a cut line is still to skip */
    char buf[8192];
} pe_proc_lines_t;

PE_TESTONLY PE_NODISCARD PE_SIGSAFE int pe_proc_lines_open(pe_proc_lines_t *it, const char *path);
/* The next line, or NULL at the end (or on a read error). */
PE_TESTONLY PE_SIGSAFE char *pe_proc_lines_next(pe_proc_lines_t *it);
PE_TESTONLY PE_SIGSAFE void pe_proc_lines_close(pe_proc_lines_t *it);
/*
 * The mappings of this process, from /proc/self/maps, one line at a time:
 *     pe_proc_maps_t it;
 *     if (pe_proc_maps_open(&it) == 0) {
 *         while (pe_proc_maps_next(&it, &lo, &hi, &prot) > 0) ...
 *         pe_proc_maps_close(&it);
 *     }
 * prot is PROT_READ | PROT_WRITE | PROT_EXEC as the line's r, w, x say.
 * The lines come through pe_proc_lines (8 KiB on the caller's stack); a long
 * path is cut.  The kernel reads the list a page at a time: a mapping that
 * changes meanwhile may be seen as it was or as it is.
 */
typedef struct pe_proc_maps_s {
    pe_proc_lines_t lines;
} pe_proc_maps_t;

/* One mapping, as a line of /proc/self/maps gives it. */
typedef struct pe_proc_map_s {
    uintptr_t lo, hi;
    int prot;            /* PROT_READ | PROT_WRITE | PROT_EXEC */
    char perms[5];       /* as written: "r-xp" */
    uint64_t offset;     /* in the file */
    unsigned long inode; /* 0 for anonymous memory and [specials] */
    char *path;          /* the rest of the line: a path, "[vdso]", "" (anonymous); writable */
} pe_proc_map_t;

PE_NODISCARD int pe_proc_maps_open(pe_proc_maps_t *it);
/* 1 with the next mapping, 0 at the end (or on a read error). */
int pe_proc_maps_next(pe_proc_maps_t *it, uintptr_t *lo, uintptr_t *hi, int *prot);
/* 1 with the next mapping in *m (valid until the next call), 0 at the end (or on a read error). */
int pe_proc_maps_entry(pe_proc_maps_t *it, pe_proc_map_t *m);
/* The next line as the kernel wrote it (no newline), or NULL at the end. */
char *pe_proc_maps_line(pe_proc_maps_t *it);
void pe_proc_maps_close(pe_proc_maps_t *it);

#endif /* PE_PROC_H */
