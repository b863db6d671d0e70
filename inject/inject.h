/*
 * inject.h: profep-inject, the program behind `profep attach PID` and
 * `profep detach PID` (docs/ATTACH.md).  One job per file:
 *   main.c    arguments, settings, the order of the steps, the one line printed
 *   target.c  what /proc says about the target: the refusals, the maps, the
 *             thread to stop
 *   elf.c     a symbol's address in a loaded ELF object (its .dynsym)
 *   remote.c  ptrace: stop one thread, system calls and one function call
 *             in it, every register put back
 *   stub.S    the bootstrap thread's code (stub.h: its page)
 * Functions return 0 or -errno; the ones that refuse write one line into
 * `why` (no trailing newline).
 */
#ifndef PE_INJECT_H
#define PE_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include <time.h>

#define PE_WHY_LEN 512

/* ---- target.c ----------------------------------------------------------------- */

typedef struct pe_obj_s {
    uint64_t base;  /* the object's load address (its first mapping, offset 0) */
    uint64_t start; /* that first mapping's range, for /proc/PID/map_files */
    uint64_t end;
    uint64_t text_lo, text_hi; /* its executable mappings' span */
    uint64_t span_hi;          /* the end of its last mapping */
    char path[512];            /* as /proc/PID/maps names it */
} pe_obj_t;

typedef struct pe_target_s {
    pid_t pid;
    pe_obj_t libc, ldso, lib; /* lib: libprofendpoints.so when loaded (base 0 otherwise) */
    int have_lib;
} pe_target_t;

/* The refusals that need no ptrace: pid, state, tracer, seccomp, kernel
   thread, architecture, static binary, C library.  0 or -errno with why. */
int pe_target_check(pe_target_t *t, pid_t pid, char *why);
/* Re-read the maps (libc, ld.so, our library). */
int pe_target_maps(pe_target_t *t, char *why);
/* The library's dependencies are reachable in the target's root; -ENOENT with why if not. */
int pe_target_deps(const pe_target_t *t, const char *lib_path, char *why);
/*
 * Threads worth stopping, best first: waiting in a system call we know how
 * to resume (read, accept, poll, epoll, nanosleep, futex...), PC in libc.
 * Fills tids (at most n); returns the count.
 */
int pe_target_candidates(const pe_target_t *t, pid_t *tids, int n);
/* 1 if tid is still a thread of the target. */
int pe_target_has_thread(pid_t pid, pid_t tid);
/* The target's network namespace differs from ours. */
int pe_target_other_netns(pid_t pid);

/* ---- elf.c -------------------------------------------------------------------- */

/* Address of the defined symbol `name` in `o` (read from the target's copy
   of the file: /proc/PID/map_files, else /proc/PID/root + path); 0 if absent. */
uint64_t pe_elf_sym(pid_t pid, const pe_obj_t *o, const char *name);

/* ---- remote.c ----------------------------------------------------------------- */

typedef struct pe_remote_s {
    pid_t pid, tid;
    struct user_regs_struct saved; /* as the thread stopped */
    unsigned char xstate[8192];    /* FP/vector state, put back exactly */
    size_t xlen;
    uint64_t maskarea; /* below the red zone of the thread's stack */
    uint64_t oldmask;
    int masked;
    int memfd;                    /* /proc/PID/mem, read-write */
    struct timespec t_stop, t_go; /* the interrupt, and the release (the pause) */
} pe_remote_t;

/*
 * Stop thread tid (PTRACE_SEIZE + PTRACE_INTERRUPT, nothing else stops) and
 * check it stopped inside a system call, at a `syscall` instruction in libc.
 * 0: stopped and usable; -EAGAIN: it was somewhere else and has been let go
 * unchanged (try another); other -errno with why: give up.
 */
int pe_remote_stop(pe_remote_t *r, pid_t pid, pid_t tid, const pe_target_t *t, char *why);
/* Block every signal in the stopped thread (pending ones wait for the end). */
int pe_remote_mask(pe_remote_t *r, char *why);
/* A system call in the stopped thread: its return value (-errno) in *ret. */
int pe_remote_syscall(pe_remote_t *r, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                      uint64_t a5, uint64_t a6, long *ret, char *why);
/* Call fn(a1..a4) on stack_top (16-aligned) returning to trap; *ret: rax. */
int pe_remote_call(pe_remote_t *r, uint64_t fn, uint64_t stack_top, uint64_t trap, uint64_t a1,
                   uint64_t a2, uint64_t a3, uint64_t a4, uint64_t *ret, char *why);
/* Put the mask, registers and FP state back and let the thread go: it
   resumes its system call as the kernel would have. */
int pe_remote_release(pe_remote_t *r, char *why);
/* Read/write the target's memory (/proc/PID/mem). */
int pe_mem_read(int memfd, uint64_t addr, void *buf, size_t len);
int pe_mem_write(int memfd, uint64_t addr, const void *buf, size_t len);

#endif /* PE_INJECT_H */
