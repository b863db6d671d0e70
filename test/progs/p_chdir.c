/*
 * p_chdir: changes directory to argv[1] first thing in main (as daemons do),
 * then sleeps argv[2] seconds and prints "slept": a relative PROFEP_PORT_FILE
 * must still land in the directory the program started in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    if (argc < 3 || chdir(argv[1]) < 0) {
        perror("p_chdir");
        return 1;
    }
    usleep((useconds_t)(atof(argv[2]) * 1e6));
    puts("slept");
    return 0;
}
