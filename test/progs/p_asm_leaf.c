/*
 * p_asm_leaf: one thread spins in hand-written assembly without unwind
 * tables (no CFI directives, as libx264's and libswscale's are) that also
 * clobbers rbp, so neither DWARF nor the frame pointer can leave it; a CPU
 * profile keeps those samples with their leaf only.  Prints "ready", runs
 * argv[1] seconds (default 30).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* asm_spin(n): n rounds of a loop that uses rbp as a counter, no .cfi_* */
__asm__(".text\n"
        ".globl asm_spin\n"
        ".type asm_spin, @function\n"
        "asm_spin:\n"
        "    push %rbp\n"
        "    mov %rdi, %rbp\n"
        "1:  imul $3, %rbp, %rax\n"
        "    dec %rbp\n"
        "    jnz 1b\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size asm_spin, .-asm_spin\n");
void asm_spin(unsigned long n);

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double end = now() + (argc > 1 ? atof(argv[1]) : 30);

    printf("ready\n");
    fflush(stdout);
    while (now() < end)
        asm_spin(10000000);
    return 0;
}
