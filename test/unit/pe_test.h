/*
 * pe_test.h: the tiny harness shared by the C unit tests.
 *
 * CHECK(cond) records a failure (with file:line) and goes on; pe_test_done()
 * prints "N passed, N failed" and returns the exit status (0 pass, 1 fail).
 * A test that made no check fails: it cannot pass empty (a loop over inputs
 * that found none, a section skipped by mistake).  A test that cannot run
 * here returns 77 (skip) itself.
 */
#ifndef PE_TEST_H
#define PE_TEST_H

#include <stdio.h>

static int pe_test_passed, pe_test_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            pe_test_passed++;                                                                      \
        } else {                                                                                   \
            pe_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            pe_test_passed++;                                                                      \
        } else {                                                                                   \
            pe_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static inline int
pe_test_done(void)
{
    printf("%d passed, %d failed\n", pe_test_passed, pe_test_failed);
    if (pe_test_passed + pe_test_failed == 0) {
        fprintf(stderr, "no check ran: a test that checks nothing fails (or returns 77 to skip)\n");
        return 1;
    }
    return pe_test_failed ? 1 : 0;
}

#endif /* PE_TEST_H */
