#pragma once
// Minimal self-contained test harness for the C++ core (no external framework needed):
// each tests/test_*.cpp is one executable registered with CTest.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace bk_test {

struct Registry {
  std::vector<std::pair<std::string, std::function<void()>>> tests;
  int failures = 0;
  static Registry& get() {
    static Registry r;
    return r;
  }
};

struct Register {
  Register(const char* name, std::function<void()> f) { Registry::get().tests.emplace_back(name, std::move(f)); }
};

inline int run_all() {
  auto& r = Registry::get();
  for (auto& [name, f] : r.tests) {
    const int before = r.failures;
    try {
      f();
    } catch (const std::exception& e) {
      std::printf("  exception: %s\n", e.what());
      ++r.failures;
    }
    std::printf("%s %s\n", r.failures == before ? "[ OK ]" : "[FAIL]", name.c_str());
  }
  std::printf("%d tests, %d failures\n", static_cast<int>(r.tests.size()), r.failures);
  return r.failures == 0 ? 0 : 1;
}

}  // namespace bk_test

#define BK_CONCAT2(a, b) a##b
#define BK_CONCAT(a, b) BK_CONCAT2(a, b)
#define TEST_CASE(name)                                                                     \
  static void BK_CONCAT(bk_test_fn_, __LINE__)();                                          \
  static bk_test::Register BK_CONCAT(bk_test_reg_, __LINE__)(name, BK_CONCAT(bk_test_fn_, __LINE__)); \
  static void BK_CONCAT(bk_test_fn_, __LINE__)()

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);         \
      ++bk_test::Registry::get().failures;                                           \
    }                                                                                \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                                        \
  do {                                                                                               \
    const double bk_a = (a), bk_b = (b);                                                             \
    if (!(std::fabs(bk_a - bk_b) <= (tol))) {                                                        \
      std::printf("  %s:%d: CHECK_NEAR(%s, %s) failed: %.17g vs %.17g (tol %g)\n", __FILE__, __LINE__, \
                  #a, #b, bk_a, bk_b, static_cast<double>(tol));                                     \
      ++bk_test::Registry::get().failures;                                                           \
    }                                                                                                \
  } while (0)

#define CHECK_THROWS(expr)                                                              \
  do {                                                                                  \
    bool bk_threw = false;                                                              \
    try {                                                                               \
      (void)(expr);                                                                     \
    } catch (const std::exception&) {                                                   \
      bk_threw = true;                                                                  \
    }                                                                                   \
    if (!bk_threw) {                                                                    \
      std::printf("  %s:%d: CHECK_THROWS(%s) did not throw\n", __FILE__, __LINE__, #expr); \
      ++bk_test::Registry::get().failures;                                              \
    }                                                                                   \
  } while (0)

#define TEST_MAIN() \
  int main() { return bk_test::run_all(); }
