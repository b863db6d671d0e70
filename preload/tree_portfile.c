/*
 * tree_portfile.c: the process tree's port files (tree_int.h): a member's
 * own (PROFEP_PORT_FILE with %p, written when it serves, removed at its
 * exit), the root's (written by the server, read and written again by a
 * successor, removed at the exit of the last root), and the one an earlier
 * image of this pid wrote (a root that exec'd).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "portfile.h"
#include "proc.h"
#include "tree_int.h"

static char port_tmpl[PATH_MAX]; /* PROFEP_PORT_FILE as given, when it holds %p */
static char cwd_at_load[PATH_MAX];
static int port_written;    /* this member wrote its own %p port file */
static char root_line[128]; /* what this successor wrote in the root's port file */

void
pe_tree_pf_init(const char *pf)
{
    if (pf && strstr(pf, "%p") && strlen(pf) < sizeof(port_tmpl)) {
        snprintf(port_tmpl, sizeof(port_tmpl), "%s", pf);
        if (pf[0] != '/' && !getcwd(cwd_at_load, sizeof(cwd_at_load)))
            port_tmpl[0] = '\0';
    }
}

PE_SIGSAFE void
pe_tree_pf_atfork_child(void)
{
    port_written = 0;
    root_line[0] = '\0';
}

/* The port in this process's port file when an image of this process wrote
   it (not older than the process: a pid used again), else 0. */
int
pe_tree_pf_earlier_port(void)
{
    char buf[160], *colon;
    pe_proc_stat_t ps;
    struct stat st;
    long long started;
    int port;

    if (!pe_cfg.port_file[0] || stat(pe_cfg.port_file, &st) < 0 || pe_proc_stat(0, 0, &ps) < 0 ||
        !(started = pe_proc_started(ps.starttime)) || (long long)st.st_mtime < started ||
        pe_proc_read(pe_cfg.port_file, buf, sizeof(buf)) <= 0 || !(colon = strrchr(buf, ':')))
        return 0;
    port = atoi(colon + 1);
    return port > 0 && port < 65536 ? port : 0;
}

/* The template with pid, from the directory at load when relative. */
static int
pid_file(char *out, size_t len, pid_t pid)
{
    char path[PATH_MAX];

    if (!port_tmpl[0] || pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)pid) < 0)
        return -ENOENT;
    if (path[0] != '/')
        snprintf(out, len, "%s/%s", cwd_at_load, path);
    else
        snprintf(out, len, "%s", path);
    return 0;
}

void
pe_tree_pf_write(int port)
{
    char full[2 * PATH_MAX + 8];

    if (pid_file(full, sizeof(full), getpid()) < 0)
        return;
    if (pe_portfile_write(full, "127.0.0.1", port) == 0) /* a member stays silent */
        port_written = 1;
}

/* The root's port file: the template with its pid, or the one fixed path. */
static int
root_port_file(char *out, size_t len)
{
    if (port_tmpl[0])
        return pid_file(out, len, pe_tree_self.root_pid) < 0 ? -ENAMETOOLONG : 0;
    snprintf(out, len, "%s", pe_cfg.port_file);
    return out[0] ? 0 : -ENOENT;
}

int
pe_tree_pf_root_port(void)
{
    char path[2 * PATH_MAX + 8], buf[160], *colon;
    int port = 0;

    if (root_port_file(path, sizeof(path)) == 0 && pe_proc_read(path, buf, sizeof(buf)) > 0 &&
        (colon = strrchr(buf, ':')))
        port = atoi(colon + 1);
    return port > 0 && port < 65536 ? port : 0;
}

void
pe_tree_pf_as_root(const char *host, int port)
{
    char path[2 * PATH_MAX + 8];

    if (port_written)
        pe_tree_pf_write(port);
    if (root_port_file(path, sizeof(path)) == 0 && pe_portfile_write(path, host, port) == 0)
        snprintf(root_line, sizeof(root_line), "%s:%d\n", host, port);
}

/* Remove path when it holds line (else another process wrote it since). */
static void
unlink_if_ours(const char *path, const char *line)
{
    char buf[160];

    if (pe_proc_read(path, buf, sizeof(buf)) > 0 && !strcmp(buf, line))
        unlink(path);
}

/*
 * Could the tree live on after this root: a child (any kind, a zombie too:
 * waitid without reaping) or a live registered member, which may take the
 * tree over and reads the root's port in its file (tree_succession.c)?
 */
static int
tree_lives_on(void)
{
    pe_tree_proc_t v[2];
    siginfo_t si;
    int e = errno, none;

    memset(&si, 0, sizeof(si));
    none = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 && errno == ECHILD;
    errno = e;
    return !none || pe_tree_list(v, 2) > 1;
}

static int exit_quiet; /* pe_tree_exit_quiet: tree_exit does nothing */

void
pe_tree_exit_quiet(void)
{
    __atomic_store_n(&exit_quiet, 1, __ATOMIC_RELEASE);
}

/*
 * At exit (exit(), a return from main) this process's %p port files go when
 * they still hold its line: a member's own (also when it became the root),
 * and the root's (a first root's own, written by http/server.c; or the one a
 * successor took over) when no child or member is left to take the tree
 * over, which would read the root's port there.  An exec keeps them (the same
 * pid serves again); a kill leaves them.  A fixed PROFEP_PORT_FILE (no %p) is
 * left as it is: it names no process, and scripts may read it afterwards.
 */
__attribute__((destructor)) static void
tree_exit(void)
{
    char full[2 * PATH_MAX + 8], want[160];
    int role = __atomic_load_n(&pe_tree_self.role, __ATOMIC_ACQUIRE);

    if (!pe_tree_self.own_port || !port_tmpl[0] || __atomic_load_n(&exit_quiet, __ATOMIC_ACQUIRE))
        return;
    if (port_written && pid_file(full, sizeof(full), getpid()) == 0) {
        snprintf(want, sizeof(want), "127.0.0.1:%d\n", pe_tree_self.own_port);
        unlink_if_ours(full, want);
    }
    if (role == PE_TREE_FORK || role == PE_TREE_EXEC || tree_lives_on())
        return;
    if (root_line[0]) { /* a successor: the first root's file */
        if (root_port_file(full, sizeof(full)) == 0)
            unlink_if_ours(full, root_line);
    } else if ((role == PE_TREE_NONE || getpid() == pe_tree_self.root_pid) &&
               pid_file(full, sizeof(full), getpid()) == 0 && !strcmp(full, pe_cfg.port_file)) {
        /* the first root's own, as http/server.c wrote it */
        snprintf(want, sizeof(want), "%s:%d\n", pe_cfg.host, pe_tree_self.own_port);
        unlink_if_ours(full, want);
    }
}
