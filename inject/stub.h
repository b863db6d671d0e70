/*
 * stub.h: the bootstrap page the injector maps in the target (stub.S runs
 * it; main.c fills it).  One mapping, freed by the bootstrap thread itself
 * as it leaves (it tail-calls munmap):
 *
 *   page 0            code (stub.S), read+exec
 *   page 1            data (the offsets below), read+write
 *   pages 2..         the stack the stopped thread's one function call
 *                     (pthread_create) runs on, so the thread's own stack
 *                     and red zone are never touched
 *
 * Shared by the assembler (stub.S) and C: numbers only.
 */
#ifndef PE_INJECT_STUB_H
#define PE_INJECT_STUB_H

#define PE_STUB_PAGE 4096
#define PE_STUB_DATA PE_STUB_PAGE /* data page's offset in the mapping */
#define PE_STUB_STACK_PAGES 16
#define PE_STUB_LEN (PE_STUB_PAGE * (2 + PE_STUB_STACK_PAGES))

/* Offsets in the data page.  The injector writes the D_IN_* ones before the
   thread starts; the stub writes the D_OUT_* ones. */
#define D_IN_PTHREAD_SELF 0
#define D_IN_PTHREAD_DETACH 8
#define D_IN_DLOPEN 16
#define D_IN_DLSYM 24
#define D_IN_DLERROR 32
#define D_IN_MUNMAP 40
#define D_IN_ENTRY 48 /* the entry point's address when the library is loaded, else 0 */
#define D_IN_BASE 56  /* the mapping, for munmap */
#define D_IN_LEN 64
#define D_IN_OP 72       /* u32: 0 attach, 1 detach */
#define D_GO 76          /* u32, injector: 1 the memfd holds the library, dlopen it; 2 give up */
#define D_OUT_FDREADY 80 /* u32: the memfd is created (D_OUT_MEMFD, -errno on failure) */
#define D_OUT_MEMFD 84   /* s32 */
#define D_OUT_DONE 88    /* u32: 1 once rc/reply are written */
#define D_ACK 92         /* u32, injector: 1 read; the thread may unmap the page */
#define D_OUT_RC                                                                                   \
    96 /* s32: the entry point's return value; PE_STUB_RC_DLERROR: dlopen/dlsym failed */
#define D_OUT_TID 100       /* s32 */
#define D_OUT_DLERR 104     /* u64: dlerror()'s string in the target */
#define D_OUT_HANDLE 112    /* u64: dlopen's handle */
#define D_IN_TS 120         /* struct timespec {0, 1 ms}: the stub's nap */
#define D_IN_NAME 136       /* char[16]: the thread's name (preload/attach.h) */
#define D_IN_MEMFD_NAME 152 /* char[32] */
#define D_IN_PATH 184       /* char[40]: "/proc/self/fd/N", written once the memfd exists */
#define D_IN_SYM 224        /* char[32]: the entry point's name */
#define D_IN_SETTINGS 256
#define PE_STUB_SETTINGS_LEN 3072
#define D_OUT_REPLY (D_IN_SETTINGS + PE_STUB_SETTINGS_LEN)
#define PE_STUB_REPLY_LEN 512

#define PE_STUB_RC_DLERROR (-100000)
#define PE_STUB_RC_NOGO (-100001)
/* The stub's waits (naps of 1 ms): for D_GO and for D_ACK. */
#define PE_STUB_WAIT_NAPS 20000

#endif /* PE_INJECT_STUB_H */
