/* p_sleep: sleeps argv[1] seconds (fractions allowed), then exits with status argv[2] via exit().
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    double s = argc > 1 ? atof(argv[1]) : 1;
    int code = argc > 2 ? atoi(argv[2]) : 0;

    usleep((useconds_t)(s * 1e6));
    printf("slept\n");
    exit(code);
}
