// p_names: a C++ program whose symbol table is a sample of what C++ names look like
// (namespaces, templates, lambdas, operators, the anonymous namespace, std::sort,
// std::map, ctors/dtors, GCC clones at -O2).  test/unit/u_demangle.c builds it and
// reads its names with nm; it also runs as a plain program (prints one number).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace shop {

struct Money {
    long cents;
    Money operator+(const Money &o) const { return {cents + o.cents}; }
    Money &operator+=(const Money &o)
    {
        cents += o.cents;
        return *this;
    }
    bool operator<(const Money &o) const { return cents < o.cents; }
    bool operator==(const Money &o) const { return cents == o.cents; }
    Money operator<<(int k) const { return {cents << k}; }
    Money &operator<<=(int k)
    {
        cents <<= k;
        return *this;
    }
    long operator()(int k) const { return cents * k; }
    long operator[](int k) const { return cents + k; }
    explicit operator bool() const { return cents != 0; }
    operator long() const { return cents; }
};

std::ostream &operator<<(std::ostream &os, const Money &m)
{
    return os << m.cents;
}

template <typename T> class Shelf {
  public:
    explicit Shelf(size_t n) : items_(n) {}
    ~Shelf() { std::fill(items_.begin(), items_.end(), T()); }
    void put(size_t i, const T &t) { items_.at(i) = t; }
    T sum() const
    {
        T s{};
        for (const T &t : items_)
            s += t;
        return s;
    }
    template <typename F> void each(F f)
    {
        for (T &t : items_)
            f(t);
    }
    static void *operator new(size_t n) { return std::malloc(n); }
    static void operator delete(void *p) { std::free(p); }
    static void *operator new[](size_t n) { return std::malloc(n); }
    static void operator delete[](void *p) { std::free(p); }

  private:
    std::vector<T> items_;
};

__attribute__((noinline)) unsigned long price_all(std::vector<unsigned int> &v)
{
    std::sort(v.begin(), v.end());
    unsigned long s = 0;
    for (unsigned int x : v)
        s += x;
    return s;
}

namespace inner {
template <typename K, typename V> __attribute__((noinline)) V lookup(const std::map<K, V> &m, K k)
{
    auto it = m.find(k);
    return it == m.end() ? V() : it->second;
}
} // namespace inner

} // namespace shop

namespace {

struct Hidden {
    int v;
    virtual ~Hidden() = default;
    virtual int get() const { return v; }
};

struct Derived : Hidden {
    int get() const override { return v * 2; }
};

__attribute__((noinline)) int hidden_work(int n)
{
    std::vector<int> v(n);
    for (int i = 0; i < n; i++)
        v[i] = (i * 7919) % n;
    std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
    std::stable_sort(v.begin(), v.end());
    return v[n / 2];
}

// A big static function called with a constant: GCC makes .constprop / .isra clones.
__attribute__((noinline)) static int clone_me(const std::vector<int> &v, int k, int unused)
{
    int s = 0;
    for (size_t i = 0; i < v.size(); i++)
        s += v[i] * k;
    if (__builtin_expect(s == 12345, 0)) {
        std::fprintf(stderr, "rare %d\n", s);
        std::abort();
    }
    return s;
}

} // namespace

template <int N> struct Fixed {
    static int twice() { return 2 * N; }
};

template <typename... Ts> size_t count_all(Ts... ts)
{
    return sizeof...(ts);
}

long use_function(const std::function<long(int)> &f)
{
    return f(3);
}

int main(int argc, char **argv)
{
    std::vector<unsigned int> prices = {5, 3, 9, 1};
    std::map<std::string, int> stock = {{"apple", 3}, {"pear", 5}};
    std::map<int, double> rates = {{1, 1.5}, {2, 2.5}};
    std::unordered_map<std::string, long> seen;
    std::set<shop::Money> wallet;
    shop::Shelf<shop::Money> shelf(4);
    auto *heap_shelf = new shop::Shelf<long>(3);
    auto *arr = new shop::Shelf<int>[2]{shop::Shelf<int>(1), shop::Shelf<int>(2)};
    std::unique_ptr<Hidden> h(new Derived());
    std::ostringstream os;
    long total = 0;
    int bias = argc;

    shelf.put(1, shop::Money{250});
    shelf.each([&](shop::Money &m) { m += shop::Money{bias}; });
    shelf.each([](shop::Money &m) { m <<= 1; });
    wallet.insert(shop::Money{1});
    wallet.insert(shop::Money{2});
    seen[argv[0]] = 1;
    os << shelf.sum() << (shop::Money{3} << 2);
    total += (long)shop::price_all(prices);
    total += shop::inner::lookup(stock, std::string("pear"));
    total += (long)shop::inner::lookup(rates, 2);
    total += hidden_work(1000 + argc) + h->get();
    total += clone_me(std::vector<int>(50, argc), 3, 0) + clone_me(std::vector<int>(7, 1), 3, 1);
    total += Fixed<3>::twice() + Fixed<7>::twice() + (long)count_all(1, 'c', 2.0, "s");
    total += use_function([&](int k) { return k * total + (shelf.sum())(1); });
    total += shop::Money{4}[1] + (long)shop::Money{6} + (bool)shop::Money{0};
    total += (long)os.str().size() + (long)wallet.size() + (long)seen.size();
    delete heap_shelf;
    delete[] arr;
    std::printf("%ld\n", total);
    return 0;
}
