// What a program embedding the library relies on: the headers survive <windows.h>-style
// min/max macros, and the sized entry points reject inputs of the wrong size with
// std::invalid_argument instead of reading or writing past their ends.
//
// Standard headers first: libstdc++'s own headers are not immune to these macros (its
// c++config.h #undefs them once, on first inclusion), MSVC's STL and libc++ are; what is
// checked here is only that *our* headers never write std::min(...)/numeric_limits<T>::max().
// So every standard header ours include is listed here (in C++20, libstdc++'s <memory> pulls in
// ranges code that the macros break).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "test_util.hpp"

// As <windows.h> defines them without NOMINMAX.
#define min(a, b) (((a) < (b)) ? (a) : (b))
#define max(a, b) (((a) > (b)) ? (a) : (b))
#include <budgetkernel/budgetkernel.hpp>
#undef min
#undef max

#include "test_oracles.hpp"  // after: it includes the umbrella header too

namespace bk = budgetkernel;
using bk::Index;
using bk::IndexVector;
using bk::RowMatrix;

namespace {

using bk_test::random_matrix;

IndexVector labels(const RowMatrix& X) {
  IndexVector y(X.rows());
  for (Index i = 0; i < X.rows(); ++i) y(i) = X(i, 0) * X(i, 1) > 0.0 ? 1 : 0;
  return y;
}

bk::KernelPegasos trained(const RowMatrix& X, const IndexVector& y) {
  bk::BSGDParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, 2.0);
  p.lam = 1e-3;
  p.budget = 10;
  bk::KernelPegasos learner(2, 2, p);
  learner.partial_fit(X, y);
  return learner;
}

}  // namespace

TEST_CASE("sized partial_fit checks the lengths of y and pred") {
  const RowMatrix X = random_matrix(40, 2, 1);
  const IndexVector y = labels(X);
  bk::KernelPegasos learner = trained(X, y);
  const std::int64_t seen = learner.counters().examples;
  CHECK(seen == 40);
  IndexVector short_y = y.head(39), pred(39);
  CHECK_THROWS(learner.partial_fit(X, short_y));
  CHECK_THROWS(learner.partial_fit(X, y, pred));
  CHECK(learner.counters().examples == seen);  // nothing learned from a rejected chunk
  IndexVector pred_ok(40);
  learner.partial_fit(X, y, pred_ok);
  CHECK(learner.counters().examples == seen + 40);
}

TEST_CASE("the sized overloads equal the pointer ones") {
  const RowMatrix X = random_matrix(60, 2, 2), T = random_matrix(20, 2, 3);
  const IndexVector y = labels(X);
  bk::BSGDParams p;
  p.kernel = bk::Kernel(bk::KernelType::RBF, 2.0);
  p.lam = 1e-3;
  p.budget = 10;
  bk::KernelPegasos a(2, 2, p), b(2, 2, p);
  IndexVector pa(60), pb(60);
  a.partial_fit(X, y, pa);
  b.partial_fit(X, y.data(), pb.data());
  CHECK(pa == pb);
  RowMatrix Db(T.rows(), 1);
  b.decision_function(T, Db);
  CHECK(a.decision_function(T) == Db);
  IndexVector qa(20), qb(20);
  a.predict(T, qa);
  b.predict(T, qb.data());
  CHECK(qa == qb);
}

TEST_CASE("wrong widths and shapes throw std::invalid_argument") {
  const RowMatrix X = random_matrix(30, 2, 4);
  const IndexVector y = labels(X);
  bk::KernelPegasos learner = trained(X, y);
  const RowMatrix wide = random_matrix(5, 3, 5), narrow = random_matrix(5, 1, 6);
  const IndexVector y5 = IndexVector::Zero(5);
  IndexVector out5(5), out4(4);
  RowMatrix D(5, 1), D_bad(4, 1), D_wide(5, 2);
  bool typed = false;
  try {
    learner.partial_fit(wide, y5);
  } catch (const std::invalid_argument&) {
    typed = true;
  }
  CHECK(typed);
  CHECK_THROWS(learner.partial_fit(narrow, y5.data()));
  CHECK_THROWS(learner.decision_function(wide, D));
  CHECK_THROWS(learner.decision_function(narrow));
  CHECK_THROWS(learner.predict(wide, out5));
  CHECK_THROWS(learner.predict(X.topRows(5), out4));
  CHECK_THROWS(learner.decision_function(X.topRows(5), D_bad));
  CHECK_THROWS(learner.decision_function(X.topRows(5), D_wide));
  IndexVector bad_label = y5;
  bad_label(2) = 2;
  CHECK_THROWS(learner.partial_fit(X.topRows(5), bad_label));
}

TEST_CASE("Model rejects a mismatched width") {
  const RowMatrix X = random_matrix(30, 2, 7);
  const bk::KernelPegasos learner = trained(X, labels(X));
  bk::FieldMap fm;
  learner.save(fm);
  const bk::Model m(bk::FieldMap::from_bytes(fm.to_bytes()));
  CHECK(m.n_features() == 2);
  CHECK(m.decision_function(X) == learner.decision_function(X));
  CHECK_THROWS(m.decision_function(random_matrix(3, 3, 8)));
  CHECK_THROWS(m.decision_function(random_matrix(3, 1, 9)));
}

TEST_MAIN()
