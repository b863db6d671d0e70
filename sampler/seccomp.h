/*
 * seccomp.h: whether a seccomp filter keeps signal-based profiling (CPU,
 * wall-clock, thread stacks) off, by PROFEP_SECCOMP (preload/config.h).
 */
#ifndef PE_SAMPLER_SECCOMP_H
#define PE_SAMPLER_SECCOMP_H

/* Constructor: says in one line when the process starts under a seccomp filter. */
void pe_seccomp_init(void);
/* 1 when the process started under a filter or the calling thread runs under one now. */
int pe_seccomp_filtered(void);
/*
 * Why a seccomp filter keeps signal-based profiling off, or NULL.  Under
 * PROFEP_SECCOMP=try it tries timer_create and rt_tgsigqueueinfo (harmless
 * ones) and says which the filter refused.  The string is the calling
 * thread's until its next call.
 */
const char *pe_seccomp_reason(void);

#endif
