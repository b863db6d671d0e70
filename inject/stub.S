/*
 * stub.S: the code the bootstrap thread runs in the target (x86-64).  It is
 * the start routine of the one thread the stopped program thread creates:
 * everything heavy (the loader, our constructor, the library's start) runs
 * here, on this thread, never on the interrupted one.  Position-independent:
 * main.c copies the bytes between pe_stub_start and pe_stub_end to the
 * mapping's page 0; every address it needs is in the data page (stub.h),
 * whose address is its argument.
 *
 * Steps: name the thread (the library's constructor reads the name:
 * preload/attach.h), detach it, create the memfd (first attach) and wait for
 * the injector to fill it, dlopen + dlsym (or use the known entry), call the
 * entry, publish the result, wait for the injector to read it, then tail-call
 * munmap on the whole mapping, which returns straight into libc's thread
 * start and ends the thread: nothing of ours is left.
 */
#include "stub.h"

#define SYS_close 3
#define SYS_nanosleep 35
#define SYS_prctl 157
#define SYS_gettid 186
#define SYS_memfd_create 319
#define PR_SET_NAME 15
#define MFD_CLOEXEC 1
/* RTLD_NOW | RTLD_NODELETE: never unloaded (stacks may hold our addresses) */
#define DLOPEN_FLAGS 0x1002

    .text
    .globl pe_stub_start, pe_stub_trap, pe_stub_end
    .type pe_stub_start, @function
pe_stub_start:
    push %rbx
    push %r12
    push %r13                       /* with the return address: 16-byte aligned */
    mov %rdi, %rbx                  /* the data page */

    mov $SYS_prctl, %eax
    mov $PR_SET_NAME, %edi
    lea D_IN_NAME(%rbx), %rsi
    xor %edx, %edx
    xor %r10d, %r10d
    xor %r8d, %r8d
    syscall
    mov $SYS_gettid, %eax
    syscall
    mov %eax, D_OUT_TID(%rbx)
    call *D_IN_PTHREAD_SELF(%rbx)
    mov %rax, %rdi
    call *D_IN_PTHREAD_DETACH(%rbx)

    movl $-1, D_OUT_MEMFD(%rbx)
    mov D_IN_ENTRY(%rbx), %r12
    test %r12, %r12
    jnz .Lcall                      /* loaded already: no memfd, no dlopen */

    mov $SYS_memfd_create, %eax
    lea D_IN_MEMFD_NAME(%rbx), %rdi
    mov $MFD_CLOEXEC, %esi
    syscall
    mov %eax, D_OUT_MEMFD(%rbx)
    movl $1, D_OUT_FDREADY(%rbx)
    test %eax, %eax
    js .Lnogo

    mov $PE_STUB_WAIT_NAPS, %r13d   /* the injector writes the file, then says go */
.Lwait_go:
    mov D_GO(%rbx), %eax
    cmp $1, %eax
    je .Lopen
    test %eax, %eax
    jnz .Lnogo_close
    call .Lnap
    dec %r13d
    jnz .Lwait_go
    jmp .Lnogo_close

.Lopen:
    lea D_IN_PATH(%rbx), %rdi
    mov $DLOPEN_FLAGS, %esi
    call *D_IN_DLOPEN(%rbx)
    mov %rax, D_OUT_HANDLE(%rbx)
    test %rax, %rax
    jz .Ldlerror
    mov %rax, %rdi
    lea D_IN_SYM(%rbx), %rsi
    call *D_IN_DLSYM(%rbx)
    mov %rax, %r12
    test %rax, %rax
    jz .Ldlerror
    call .Lclose_memfd

.Lcall:
    cmpl $0, D_IN_OP(%rbx)
    jne .Ldetach
    lea D_IN_SETTINGS(%rbx), %rdi
    lea D_OUT_REPLY(%rbx), %rsi
    mov $PE_STUB_REPLY_LEN, %edx
    call *%r12
    jmp .Lresult
.Ldetach:
    lea D_OUT_REPLY(%rbx), %rdi
    mov $PE_STUB_REPLY_LEN, %esi
    call *%r12
.Lresult:
    mov %eax, D_OUT_RC(%rbx)
    jmp .Ldone

.Ldlerror:
    call *D_IN_DLERROR(%rbx)
    mov %rax, D_OUT_DLERR(%rbx)
    movl $PE_STUB_RC_DLERROR, D_OUT_RC(%rbx)
    jmp .Lpublish_close
.Lnogo_close:
    movl $PE_STUB_RC_NOGO, D_OUT_RC(%rbx)
.Lpublish_close:
    call .Lclose_memfd
    jmp .Ldone
.Lnogo:
    movl $PE_STUB_RC_NOGO, D_OUT_RC(%rbx)

.Ldone:
    movl $1, D_OUT_DONE(%rbx)
    mov $PE_STUB_WAIT_NAPS, %r13d   /* until the injector has read the result */
.Lwait_ack:
    cmpl $0, D_ACK(%rbx)
    jne .Lleave
    call .Lnap
    dec %r13d
    jnz .Lwait_ack

.Lleave:
    mov D_IN_BASE(%rbx), %rdi
    mov D_IN_LEN(%rbx), %rsi
    mov D_IN_MUNMAP(%rbx), %rax
    pop %r13
    pop %r12
    pop %rbx
    jmp *%rax                       /* munmap(base, len) returns to libc's thread start */

/* helpers (called with the stack 8 off alignment: they call nothing) */
.Lnap:
    mov $SYS_nanosleep, %eax
    lea D_IN_TS(%rbx), %rdi
    xor %esi, %esi
    syscall
    ret
.Lclose_memfd:
    movslq D_OUT_MEMFD(%rbx), %rdi
    test %edi, %edi
    js 1f
    mov $SYS_close, %eax
    syscall
    movl $-1, D_OUT_MEMFD(%rbx)
1:  ret

/* The remote function call's return address: the injector catches the trap. */
pe_stub_trap:
    int3
    .p2align 3
pe_stub_end:
    .size pe_stub_start, pe_stub_end - pe_stub_start
    .section .note.GNU-stack, "", @progbits
