/*
 * fd_int.h: what preload/fd.c shares with the interposers in
 * preload/fd_hooks.c: the real functions, the registry's slots, and the
 * helpers that find, move and drop our descriptors.
 *
 * Signal-safe: everything marked PE_SIGSAFE.
 */
#ifndef PE_FD_INT_H
#define PE_FD_INT_H

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "guard.h"
#include "pe.h"

/*
 * Resolved in the constructor, before any thread of ours exists; until then
 * (another library's constructor) each call is the raw system call.
 */
typedef struct pe_fd_real_s {
    int (*close)(int);
    int (*close_range)(unsigned, unsigned, int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*socket)(int, int, int);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*pipe)(int *);
    int (*pipe2)(int *, int);
    int (*poll)(struct pollfd *, nfds_t, int);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*send)(int, const void *, size_t, int);
    int (*shutdown)(int, int);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    int (*getsockname)(int, struct sockaddr *, socklen_t *);
    int (*getpeername)(int, struct sockaddr *, socklen_t *);
    int (*fcntl64)(int, int, ...);
} pe_fd_real_t;

extern pe_fd_real_t pe_fd_real;

#define PE_FD_REAL(f) __atomic_load_n(&pe_fd_real.f, __ATOMIC_RELAXED)

/* Fill pe_fd_real (dlsym RTLD_NEXT); once. */
void pe_fd_resolve(void);
/* The real close / fcntl, or the raw system call before pe_fd_resolve. */
PE_SIGSAFE int pe_fd_sys_close(int fd);
PE_SIGSAFE int pe_fd_sys_fcntl(int fd, int cmd, long arg);

/* Far more than we hold: a listening socket, 8 workers' connections plus
   civetweb's queue of accepted ones, the unwinder's pipe. */
#define PE_FD_SLOTS 128

enum { S_FREE, S_BUSY, S_LIVE, S_DEAD };
enum { K_SOCK = 1, K_CONN, K_PIPE };

typedef struct pe_fd_slot_s {
    int state; /* S_*; S_LIVE and S_DEAD are published with release */
    int kind;
    int virt;  /* the number our code (civetweb, libunwind) holds */
    int real;  /* where the descriptor is: virt unless the program moved it; -1 dead */
    dev_t dev; /* identity at registration, to tell ours from a reused number */
    ino_t ino;
    dev_t dev2; /* while pe_fd_replace runs: the identity it is giving it (ino2 != 0) */
    ino_t ino2;
} pe_fd_slot_t;

extern pe_fd_slot_t pe_fd_slots[PE_FD_SLOTS];
/* Slots ever claimed are all below this (scans stop there: a handful, not 128). */
extern int pe_fd_nslots;

PE_SIGSAFE static inline int
pe_fd_used(void)
{
    return __atomic_load_n(&pe_fd_nslots, __ATOMIC_ACQUIRE);
}
/* Lowest real number ever registered: program calls below it pass at once. */
extern int pe_fd_lowest;
/* Set for good once a descriptor of ours was moved or lost: our calls then translate. */
extern int pe_fd_translating;
/* The process the registry describes (a vfork child shares it and must not edit it). */
extern pid_t pe_fd_owner;

/* Is the caller our code (a thread of ours, or our unwinder on any thread)? */
PE_SIGSAFE static inline int
pe_fd_ours_ctx(void)
{
    return pe_tls.internal | pe_tls.in_unwind;
}

/* The slot our code knows as virt (live or dead) / the live slot at real fd; or NULL. */
PE_SIGSAFE pe_fd_slot_t *pe_fd_by_virt(int virt);
PE_SIGSAFE pe_fd_slot_t *pe_fd_by_real(int fd);
/* 1 if fd is still the file s was registered with. */
PE_SIGSAFE int pe_fd_same_file(const pe_fd_slot_t *s, int fd);
/* s is gone (closed or replaced behind our back): our code gets EBADF on it. */
PE_SIGSAFE void pe_fd_mark_dead(pe_fd_slot_t *s);
/* Free s (our code closed it). */
PE_SIGSAFE void pe_fd_release(pe_fd_slot_t *s);
/* The number our code's fd stands for now (-1: lost); fd itself for the program. */
PE_SIGSAFE int pe_fd_xlate(int fd);
/* The live slot at fd, checked to still be ours (a stale one is dropped); NULL otherwise,
   and in a vfork child. */
pe_fd_slot_t *pe_fd_ours_at(int fd);
/* Where our descriptors go: the lowest number F_DUPFD_CLOEXEC is asked for. */
PE_SIGSAFE int pe_fd_high_base(void);
/* A close-on-exec copy of fd at from or above that no slot knows by its old number; -1. */
PE_SIGSAFE int pe_fd_dup_high(int fd, int from);
/* Move a descriptor our code just created up out of the program's way, register it. */
PE_SIGSAFE int pe_fd_adopt(int fd, int kind);
/* The program's side of fd.h's gate: around its close, close_range, dup2, dup3. */
PE_SIGSAFE void pe_fd_close_begin(void);
PE_SIGSAFE void pe_fd_close_end(void);
/* s lost: mark it dead; a listening socket says so in one line. */
void pe_fd_lost(pe_fd_slot_t *s, int virt);

#endif /* PE_FD_INT_H */
