/* p_hello: plain C program with known output and exit status 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
    char *s = malloc(64);
    int i;

    for (i = 0; i < 5; i++) {
        snprintf(s, 64, "line %d of %s", i, argc > 1 ? argv[1] : "hello");
        puts(s);
    }
    free(s);
    return 3;
}
