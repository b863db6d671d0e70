/*
 * log.c: prefixed, levelled, rate-capped stderr lines.  Each message is
 * formatted into a stack buffer and written with one write(2) so lines from
 * different threads never interleave, and stdio's buffers (the host's) are
 * never touched.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Enough for anything we say; the budget stops a hot failure from flooding stderr. */
#define PE_LOG_LINE 512
#define PE_LOG_BUDGET 200

static enum pe_log_level log_level = PE_LOG_INFO;
static int log_budget = PE_LOG_BUDGET;

void
pe_log_set_level(enum pe_log_level level)
{
    log_level = level;
}

/* pe_log_capture: one thread's warnings go into a buffer instead. */
static char *capture_buf;
static size_t capture_len;
static long capture_tid;

void
pe_log_capture(char *buf, size_t len)
{
    capture_buf = NULL;
    if (buf && len) {
        buf[0] = '\0';
        capture_len = len;
        capture_tid = gettid();
        capture_buf = buf;
    }
}

static void
log_write(enum pe_log_level level, const char *fmt, va_list ap)
{
    char line[PE_LOG_LINE];
    int saved_errno = errno;
    size_t n;

    if (capture_buf && level <= PE_LOG_WARN && gettid() == capture_tid) {
        n = strlen(capture_buf);
        if (n && n + 2 < capture_len)
            n += (size_t)snprintf(capture_buf + n, capture_len - n, "; ");
        if (n + 1 < capture_len)
            vsnprintf(capture_buf + n, capture_len - n, fmt, ap);
        goto out;
    }
    if (level > log_level || __atomic_sub_fetch(&log_budget, 1, __ATOMIC_RELAXED) < 0)
        goto out;
    n = (size_t)snprintf(line, sizeof(line), "profendpoints: ");
    vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    n = strlen(line);
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to complain */
    }
out:
    errno = saved_errno;
}

void
pe_log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write(PE_LOG_INFO, fmt, ap);
    va_end(ap);
}

void
pe_log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write(PE_LOG_WARN, fmt, ap);
    va_end(ap);
}

void
pe_log_debug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write(PE_LOG_DEBUG, fmt, ap);
    va_end(ap);
}

PE_SIGSAFE void
pe_log_sigsafe(const char *msg)
{
    static const char prefix[] = "profendpoints: ";
    char line[PE_LOG_LINE];
    size_t n = sizeof(prefix) - 1, i;
    int saved_errno = errno;

    if (log_level < PE_LOG_WARN)
        return;
    memcpy(line, prefix, n);
    for (i = 0; msg[i] && n < sizeof(line) - 1; i++)
        line[n++] = msg[i];
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
    }
    errno = saved_errno;
}
