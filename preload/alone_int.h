/*
 * alone_int.h: what the interposers of a process that must be alone
 * (alone_hooks.c, alone_tasks.c) share with the step aside (alone.c).
 */
#ifndef PE_ALONE_INT_H
#define PE_ALONE_INT_H

/* A call of the program's own (not ours, not a vfork child's) in a process we still serve. */
int pe_alone_program_call(void);
/* Step aside for good because the program does what why says (one line from a root). */
void pe_alone_step_aside(const char *why);

/* A real function of tab (a file's table of them), found at first use:
   another library's constructor may call our interposers before ours runs. */
#define PE_ALONE_REAL(tab, f)                                                                      \
    (__atomic_load_n(&tab.f, __ATOMIC_RELAXED)                                                     \
         ? tab.f                                                                                   \
         : (__atomic_store_n(&tab.f, (__typeof__(tab.f))dlsym(RTLD_NEXT, #f), __ATOMIC_RELAXED),   \
            tab.f))

#endif /* PE_ALONE_INT_H */
