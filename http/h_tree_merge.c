/*
 * h_tree_merge.c: pid=all.
 */
#include "http_int.h"

int
pe_http_tree_all(pe_req_t *r, const char *raw_query)
{
    return pe_http_error(r, 501, "pid=all: not yet");
}
