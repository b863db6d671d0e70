/* p_daemon: forks; the parent exits at once, the child lives on argv[1] seconds (a daemon). */
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    usleep(1000000); /* let the parent's server bind first, on a loaded machine too */
    if (fork() != 0)
        return 0;
    sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 3);
    return 0;
}
