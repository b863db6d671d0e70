/* sort.c: glibc's qsort (msort_with_tmp, recursive and inlined into itself) in a
   loop, for e2e_names' recursion row.  Argument: seconds to run. */
#include <stdlib.h>
#include <time.h>

static int
cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
    int n = 200000, *v = malloc(n * sizeof(int));
    time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 5);

    while (v && time(NULL) < end) {
        for (int i = 0; i < n; i++)
            v[i] = rand();
        qsort(v, n, sizeof(int), cmp);
    }
    return 0;
}
