/*
 * dw_resolve: resolves the hex addresses on stdin with symbols/dwarf.c and
 * prints them as `llvm-symbolizer --inlining --no-demangle` does (function,
 * file:line:column per frame, a blank line per address), so the two can be
 * timed and compared on the same input (scripts/bench_dwarf.sh).
 * Usage: dw_resolve OBJ [BUILD_ID [DEBUG_DIR]] < addresses
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "symbols/dwarf.h"

int
main(int argc, char **argv)
{
    pe_dw_frame_t fr[64];
    pe_dw_obj_t *o;
    char line[256];
    int n, i;

    if (argc < 2)
        return 2;
    o = pe_dw_open(argv[1], argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "/usr/lib/debug");
    while (fgets(line, sizeof(line), stdin)) {
        unsigned long long a = strtoull(line, NULL, 16);

        n = o ? pe_dw_lookup(o, a, fr, 64) : 0;
        if (n <= 0)
            printf("??\n??:0:0\n");
        for (i = 0; i < n; i++)
            printf("%s\n%s:%u:%u\n", fr[i].name ? fr[i].name : "??", fr[i].file ? fr[i].file : "??",
                   fr[i].line, fr[i].column);
        printf("\n");
    }
    fprintf(stderr, "dw_resolve: %zu bytes held\n", pe_dw_bytes());
    pe_dw_trim();
    return 0;
}
