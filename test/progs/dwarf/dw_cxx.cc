/*
 * dw_cxx.cc: u_dwarf's test program, C++ part: templates, classes with
 * methods defined out of line, always_inline helpers nested, a lambda.
 */
#include <map>
#include <string>
#include <vector>

#include "dw_inl.h"

namespace dwt
{

template <typename T> struct Acc {
    T total{};
    __attribute__((always_inline)) inline void add(T v)
    {
        total += static_cast<T>(dw_hdr_mix(static_cast<unsigned>(v)));
    }
    T get() const;
};

template <typename T>
T
Acc<T>::get() const
{
    return total;
}

template <typename T>
__attribute__((always_inline)) inline T
twice(T x)
{
    Acc<T> a;
    a.add(x);
    a.add(x + 1);
    return a.get();
}

template <typename T, int N>
__attribute__((noinline)) T
run(T seed)
{
    T s = seed;
    for (int i = 0; i < N; i++)
        s += twice<T>(s + static_cast<T>(i));
    return s;
}

class Shape
{
  public:
    virtual ~Shape()
    {
    }
    virtual unsigned area(unsigned k) const = 0;
};

class Box : public Shape
{
  public:
    explicit Box(unsigned w) : w_(w)
    {
    }
    unsigned area(unsigned k) const override;

  private:
    unsigned w_;
};

unsigned
Box::area(unsigned k) const
{
    return twice<unsigned>(w_ * k) + dw_hdr_step(w_, k);
}

static __attribute__((noinline)) unsigned
count_words(const std::string &s)
{
    std::map<std::string, unsigned> m;
    std::string cur;
    for (char c : s) {
        if (c == ' ') {
            m[cur]++;
            cur.clear();
        } else {
            cur += c;
        }
    }
    m[cur]++;
    unsigned r = 0;
    for (auto &kv : m)
        r += kv.second * dw_hdr_mix(static_cast<unsigned>(kv.first.size()));
    return r;
}

} // namespace dwt

extern "C" unsigned
dw_cxx_entry(unsigned seed, int n)
{
    std::vector<unsigned> v;
    dwt::Box b(seed | 1);
    const dwt::Shape &sh = b;
    for (int i = 0; i < n; i++)
        v.push_back(sh.area(static_cast<unsigned>(i)));
    auto f = [&](unsigned x) { return dwt::twice<unsigned>(x) ^ dwt::run<unsigned, 3>(x); };
    unsigned r = dwt::run<unsigned, 5>(seed) + dwt::run<unsigned long, 7>(seed);
    for (unsigned x : v)
        r += f(x);
    r += dwt::count_words("a bb a ccc bb a");
    return r;
}
