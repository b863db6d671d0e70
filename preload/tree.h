/*
 * tree.h: the process tree (README "Process trees").  The first active
 * process is the root: it serves on PROFEP_ADDR, keeps the registry of its
 * descendants and sets PROFEP_TREE=<rootpid>:<nonce> in its environment.
 * A fork child that lives on, and an exec'd descendant that finds
 * PROFEP_TREE, serve on their own ephemeral loopback port (few workers, same
 * token) and register with the root by one datagram on an abstract unix
 * socket named after the root's pid and nonce (nothing on disk); the kernel
 * vouches for the sender's pid and uid (SCM_CREDENTIALS).
 *
 * A fork child starts nothing at fork: it is "pending" and its server thread
 * is started at a blocking call (pe_tree_safe_point, from the interposers of
 * fd_hooks.c and tree_hooks.c) on a program thread: one that waits without
 * limit or for a second or more, or any other made at least PE_TREE_LIVE_MS
 * after the fork with the same signal mask as the thread's previous one (a
 * handler runs with more signals blocked); never on an alternate signal stack.
 * A child that execs or exits before that starts no thread.
 *
 * The registry (root only) holds at most PE_TREE_MAX processes; dead ones are
 * reaped when listed (pid alive with the same start time).  Its one mutex is
 * taken only on the root's own threads and re-made in a fork child.
 *
 * Signal-safe: pe_tree_atfork_child (a child of fork or _Fork).
 */
#ifndef PE_TREE_H
#define PE_TREE_H

#include <sys/types.h>

#include "pe.h"

#define PE_TREE_MAX 4096
/* A fork child is taken to live on once it blocks this long after the fork. */
#define PE_TREE_LIVE_MS 20

enum { PE_TREE_NONE, PE_TREE_ROOT, PE_TREE_FORK, PE_TREE_EXEC };

/* Constructor, active process, after pe_cfg_load: role, and PROFEP_TREE for a root. */
void pe_tree_init(void);
/*
 * A root whose pid an earlier image of the same program chain served as
 * root (it exec'd: env, a shell, an interpreter): the port that image
 * announced, to listen on again (with PROFEP_ADDR's port 0) and not announce
 * twice; 0 otherwise.
 */
int pe_tree_announced_port(void);
/* This process's role (PE_TREE_*). */
/*
 * After `profep attach --children` (preload/attach.c), instead of
 * pe_tree_init: root (its pid and the key the injector drew) makes this
 * process the tree's root (root == getpid()) or a member of it; root 0: no
 * tree.  No thread of ours may be running.
 */
void pe_tree_init_attached(pid_t root, unsigned long long key);
int pe_tree_role(void);
/* 1 when this process serves as a member (loopback, ephemeral port, few workers). */
int pe_tree_member(void);

/* Fork child, from events.c: 1 when it stays active and waits for its safe point. */
PE_SIGSAFE int pe_tree_atfork_child(int parent_active);

/* A fork child waiting for its safe point (one load on the blocking calls' path). */
extern int pe_tree_pending;
/*
 * From a blocking interposer when pe_tree_pending: maybe start the server
 * now.  long_wait: the call is about to wait without limit or for a second
 * or more (an idle worker's epoll_wait): the child lives on, whatever its age.
 */
void pe_tree_safe_point(int long_wait); /* tree_hooks.c: it starts the server */
/* The checks of pe_tree_safe_point that are the registry's (mask, age, the
   pending flag, taken by the one caller that gets 1). */
int pe_tree_start_due(int long_wait);
#define PE_TREE_SAFE_POINT_WAIT(long_wait)                                                         \
    do {                                                                                           \
        if (__builtin_expect(__atomic_load_n(&pe_tree_pending, __ATOMIC_RELAXED), 0))              \
            pe_tree_safe_point(long_wait);                                                         \
    } while (0)
#define PE_TREE_SAFE_POINT() PE_TREE_SAFE_POINT_WAIT(0)
/* A poll-style timeout in ms that counts as a long wait. */
#define PE_TREE_LONG_MS(ms) ((ms) < 0 || (ms) >= 1000)

/*
 * From the server thread once it listens on `port`: the root starts its
 * registry thread; a member writes its port file (PROFEP_PORT_FILE with %p)
 * and registers.
 */
void pe_tree_served(int port);

/*
 * Succession: a member whose tree's root is gone becomes the root (the
 * first to bind the tree's registry name) and takes the root's port with
 * this hook, set by the server (http/server.c) before it serves: listen on
 * host:port instead of the member's own port, 0 or -errno (then the member
 * keeps its port and the root's port file names it).  Called on our
 * watcher thread.
 */
extern int (*pe_tree_take_port)(const char *host, int port);

/*
 * For good, when the process must be alone (alone.c): no server will
 * start here; the root's registry thread leaves (the caller waits for it to
 * vanish), and a member that served tells the root it serves no more.
 */
void pe_tree_step_aside(void);
/*
 * No clean-up at exit that makes a system call (the root's port file stays):
 * called by the step aside (a filter or a sandbox may be on us by then) and
 * when the process started under a seccomp filter, which may kill it for a
 * call it never makes itself (waitid, unlink).
 */
void pe_tree_exit_quiet(void);

/* One process of the tree as the registry knows it. */
typedef struct pe_tree_proc_s {
    pid_t pid;
    int port;
    int origin;                   /* PE_TREE_ROOT, _FORK or _EXEC */
    unsigned long long starttime; /* /proc/PID/stat field 22, against pid reuse */
    char program[64];
} pe_tree_proc_t;

/*
 * Root: copy up to max live processes (the root first) into out; dead ones
 * leave the registry.  Returns how many, or 0 outside a root.
 */
int pe_tree_list(pe_tree_proc_t *out, int max);
/* How many pe_tree_list would give now (itself included): a size for `out`. */
int pe_tree_size(void);
/* Root: the live process pid of the tree into *out; 0, or -ENOENT. */
int pe_tree_find(pid_t pid, pe_tree_proc_t *out);
/* "root", "fork" or "exec". */
const char *pe_tree_origin_name(int origin);

#endif /* PE_TREE_H */
