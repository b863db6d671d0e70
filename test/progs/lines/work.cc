/*
 * work.cc: C++ CPU work with every kind of name, for e2e_names: namespaces,
 * a class template, a lambda, operators, an anonymous namespace, std::sort
 * and std::map, for SECONDS (argv[1]).  Built by the test with g++ -O2 -g.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <vector>

namespace shop {
namespace {
inline __attribute__((always_inline)) unsigned
mix(unsigned x)
{
    for (int i = 0; i < 40; i++)
        x = x * 2654435761u + (x >> 13);
    return x;
}
} // namespace

template <typename T> struct Basket {
    std::vector<T> items;
    __attribute__((noinline)) T operator()(T seed) const
    {
        T s = seed;
        for (const T &x : items)
            s += mix(static_cast<unsigned>(x));
        return s;
    }
    __attribute__((noinline)) bool operator<(const Basket &o) const
    {
        return items.size() < o.items.size();
    }
};

__attribute__((noinline)) unsigned
price_all(std::vector<unsigned> &v)
{
    std::sort(v.begin(), v.end());
    auto weigh = [&v](unsigned k) __attribute__((noinline)) {
        unsigned s = 0;
        for (int round = 0; round < 8; round++)
            for (unsigned x : v)
                s += mix(x ^ k ^ (unsigned)round);
        return s;
    };
    return weigh(7);
}

__attribute__((noinline)) unsigned
index_all(const std::vector<unsigned> &v)
{
    std::map<unsigned, unsigned> m;
    for (size_t i = 0; i < v.size(); i += 8)
        m[v[i]] += 1;
    return (unsigned)m.size();
}
} // namespace shop

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 5;
    std::vector<unsigned> v(100000);
    shop::Basket<unsigned> b{std::vector<unsigned>(50000, 3)}, c{};
    unsigned s = 0;
    timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (auto &x : v)
            x = (unsigned)rand();
        s += shop::price_all(v) + shop::index_all(v) + b(s) + (c < b);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    std::printf("done %u\n", s);
    return 0;
}
