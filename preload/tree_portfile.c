/*
 * tree_portfile.c: the process tree's port files (tree_int.h): a member's
 * own (PROFEP_PORT_FILE with %p, written when it serves, removed at its
 * exit), the root's (read and written again by a successor), and the one an
 * earlier image of this pid wrote (a root that exec'd).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "portfile.h"
#include "proc.h"
#include "tree_int.h"

static char port_tmpl[PATH_MAX]; /* PROFEP_PORT_FILE as given, when it holds %p */
static char cwd_at_load[PATH_MAX];
static int port_written; /* this member wrote its own %p port file */

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

void
pe_tree_pf_write(int port)
{
    char path[PATH_MAX], full[2 * PATH_MAX + 8];

    if (!port_tmpl[0] || pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)getpid()) < 0)
        return;
    if (path[0] != '/')
        snprintf(full, sizeof(full), "%s/%s", cwd_at_load, path);
    else
        snprintf(full, sizeof(full), "%s", path);
    if (pe_portfile_write(full, "127.0.0.1", port) == 0) /* a member stays silent */
        port_written = 1;
}

/* The root's port file: the template with its pid, or the one fixed path. */
static int
root_port_file(char *out, size_t len)
{
    char path[PATH_MAX];

    if (port_tmpl[0]) {
        if (pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)pe_tree_self.root_pid) < 0)
            return -ENAMETOOLONG;
        if (path[0] != '/')
            snprintf(out, len, "%s/%s", cwd_at_load, path);
        else
            snprintf(out, len, "%s", path);
    } else {
        snprintf(out, len, "%s", pe_cfg.port_file);
    }
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
    if (root_port_file(path, sizeof(path)) == 0)
        (void)pe_portfile_write(path, host, port);
}

/*
 * A member's own port file (PROFEP_PORT_FILE with %p) goes with it (also when
 * it became the root): at exit (exit(), a return from main), when it still
 * holds this member's line.  An exec keeps it (the same pid serves again); a
 * kill leaves it.
 */
__attribute__((destructor)) static void
tree_exit(void)
{
    char path[PATH_MAX], full[2 * PATH_MAX + 8], buf[96], want[96];

    if (!port_written || !pe_tree_self.own_port ||
        pe_cfg_expand_pid(port_tmpl, path, sizeof(path), (int)getpid()) < 0)
        return;
    if (path[0] != '/')
        snprintf(full, sizeof(full), "%s/%s", cwd_at_load, path);
    else
        snprintf(full, sizeof(full), "%s", path);
    snprintf(want, sizeof(want), "127.0.0.1:%d\n", pe_tree_self.own_port);
    if (pe_proc_read(full, buf, sizeof(buf)) > 0 && !strcmp(buf, want))
        unlink(full);
}
