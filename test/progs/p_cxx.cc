// p_cxx: C++ with new/delete, STL containers and exceptions thrown and caught in a loop.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

static int
may_throw(int i)
{
    if (i % 3 == 0)
        throw std::runtime_error("three");
    return i;
}

int
main(int argc, char **argv)
{
    long caught = 0, sum = 0;
    int rounds = argc > 1 ? std::atoi(argv[1]) : 20000;
    std::map<std::string, int> m;

    for (int i = 0; i < rounds; i++) {
        std::vector<int> *v = new std::vector<int>(16, i);
        try {
            sum += may_throw(i) + (*v)[3];
        } catch (const std::exception &e) {
            caught++;
        }
        m[std::to_string(i % 100)] += 1;
        delete v;
    }
    std::printf("caught %ld sum %ld keys %zu\n", caught, sum, m.size());
    return 0;
}
