/*
 * p_quiet_park_fp: p_quiet_park built with frame pointers (the Makefile's
 * -fno-omit-frame-pointer kept), as Fedora and Ubuntu build programs now.
 */
#define P_QUIET_PARK_FP 1
#include "p_quiet_park.c"
