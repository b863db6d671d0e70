/*
 * tree_int.h: what the files of the process tree (tree.h) share: tree.c this
 * process's place in the tree, tree_registry.c the root's registry and a
 * member's registration, tree_succession.c the succession when the root is
 * gone, tree_portfile.c the port files.
 */
#ifndef PE_TREE_INT_H
#define PE_TREE_INT_H

#include <sys/types.h>

#include "pe.h"
#include "tree.h"

/* ---- this process (tree.c) ---- */

typedef struct {
    int role;                 /* PE_TREE_*; a successor becomes the root (atomic store) */
    pid_t root_pid;           /* the tree's first root */
    unsigned long long nonce; /* with root_pid, the registry's name */
    int own_port;             /* where this process serves, once it does (pe_tree_served) */
} pe_tree_self_t;
extern pe_tree_self_t pe_tree_self;

/* ---- the registry (tree_registry.c) ---- */

/* A fork child starts with no registry (the parent's stays the parent's). */
PE_SIGSAFE void pe_tree_reg_atfork_child(void);
/* Before an attached tree: -1 while an earlier registry thread is leaving, else 0. */
int pe_tree_reg_rearm(void);
/* The registry's socket, bound to the tree's name; -errno (EADDRINUSE: held). */
int pe_tree_reg_bind(void);
/* The registry thread on the bound socket fd (closed if no thread starts). */
void pe_tree_reg_start(int fd);
/* The root: bind and start, or say why the tree is unavailable. */
void pe_tree_reg_root_start(void);
/* Takes the registry's socket away (-1: none), then pe_tree_reg_stop(fd) ends its thread. */
int pe_tree_reg_take_fd(void);
void pe_tree_reg_stop(int fd);
/* A member tells the root where it serves (port 0: no more).  tries_max:
   sends attempted while the root is not there yet.  0, or the last -errno. */
int pe_tree_reg_send(int port, int tries_max);
/* The same, retried for about five seconds when port is not 0. */
void pe_tree_reg_join(int port);

/* ---- the succession (tree_succession.c) ---- */

PE_SIGSAFE void pe_tree_succ_atfork_child(void);
/* A member's watcher thread: started when it serves, stopped when it steps aside. */
void pe_tree_succ_start(void);
void pe_tree_succ_stop(void);

/* ---- the port files (tree_portfile.c) ---- */

/* PROFEP_PORT_FILE (pf, may be NULL) as a member's template when it holds %p. */
void pe_tree_pf_init(const char *pf);
PE_SIGSAFE void pe_tree_pf_atfork_child(void);
/* The port in this process's port file when an image of this process wrote
   it (not older than the process: a pid used again), else 0. */
int pe_tree_pf_earlier_port(void);
/* A member's own port file (%p), when there is a template. */
void pe_tree_pf_write(int port);
/* The port the root's port file names, or 0. */
int pe_tree_pf_root_port(void);
/* A successor: its own file again (if it wrote one) and the root's, with host:port. */
void pe_tree_pf_as_root(const char *host, int port);

#endif
