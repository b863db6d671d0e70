/*
 * log.h: the library's only way to talk: one-line stderr messages prefixed
 * "profendpoints: ", filtered by PROFEP_LOG (info, warn, off), with a cap on
 * repeats so a broken feature cannot flood the host's stderr.
 *
 * Signal-safe: pe_log_sigsafe only; the others format with vsnprintf.
 */
#ifndef PE_LOG_H
#define PE_LOG_H

#include "pe.h"

enum pe_log_level { PE_LOG_OFF = 0, PE_LOG_WARN = 1, PE_LOG_INFO = 2, PE_LOG_DEBUG = 3 };

void pe_log_set_level(enum pe_log_level level);
/* Until called again with NULL, the calling thread's warnings go into buf
   ("; " between them), never to stderr (preload/attach.c: the attach
   command prints them; the program's stderr is the program's). */
void pe_log_capture(char *buf, size_t len);
void pe_log_info(const char *fmt, ...) PE_PRINTF(1, 2);
void pe_log_warn(const char *fmt, ...) PE_PRINTF(1, 2);
void pe_log_debug(const char *fmt, ...) PE_PRINTF(1, 2);
/* Write msg (no formatting) as one prefixed line with write(2). */
PE_SIGSAFE void pe_log_sigsafe(const char *msg);

#endif /* PE_LOG_H */
