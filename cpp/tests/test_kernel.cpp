// Kernel values against closed forms: value, from_dot and row agree with the direct formulas.
#include <budgetkernel/kernel.hpp>
#include <budgetkernel/sv_store.hpp>

#include <limits>
#include <random>

#include "test_util.hpp"

using budgetkernel::Index;
using budgetkernel::Kernel;
using budgetkernel::KernelType;
using budgetkernel::RowMatrix;
using budgetkernel::Vector;

namespace {

RowMatrix random_matrix(Index n, Index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  RowMatrix m(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < d; ++j) m(i, j) = g(rng);
  return m;
}

double direct(KernelType t, const Vector& x, const Vector& z, double gamma, int degree, double coef0) {
  switch (t) {
    case KernelType::Linear: {
      double s = 0.0;
      for (Index j = 0; j < x.size(); ++j) s += x(j) * z(j);
      return s;
    }
    case KernelType::Polynomial: {
      double s = 0.0;
      for (Index j = 0; j < x.size(); ++j) s += x(j) * z(j);
      return std::pow(gamma * s + coef0, degree);
    }
    case KernelType::RBF: {
      double s = 0.0;
      for (Index j = 0; j < x.size(); ++j) s += (x(j) - z(j)) * (x(j) - z(j));
      return std::exp(-gamma * s);
    }
  }
  return 0.0;
}

void check_kernel(KernelType t, double gamma, int degree, double coef0) {
  const Kernel k(t, gamma, degree, coef0);
  const Index n = 17, d = 5;
  const RowMatrix S = random_matrix(n, d, 42) * 0.5;
  const RowMatrix Q = random_matrix(4, d, 7) * 0.5;
  Vector sq(n);
  for (Index i = 0; i < n; ++i) sq(i) = S.row(i).squaredNorm();

  for (Index q = 0; q < Q.rows(); ++q) {
    const Vector x = Q.row(q).transpose();
    const double x_sq = x.squaredNorm();
    Vector out(n + 3);
    out.setConstant(-123.0);
    k.row(S, sq, n, x, x_sq, out);
    for (Index i = 0; i < n; ++i) {
      const Vector s = S.row(i).transpose();
      const double expect = direct(t, s, x, gamma, degree, coef0);
      const double tol = 1e-12 * std::max(1.0, std::fabs(expect));
      CHECK_NEAR(k.value(s, x), expect, tol);
      CHECK_NEAR(k.from_dot(s.dot(x), sq(i), x_sq), expect, tol);
      CHECK_NEAR(out(i), expect, tol);
    }
    // row() writes only the first n entries.
    CHECK(out(n) == -123.0);
    CHECK_NEAR(k.self(x_sq), direct(t, x, x, gamma, degree, coef0), 1e-12 * std::max(1.0, x_sq * x_sq));
  }
}

}  // namespace

TEST_CASE("linear kernel matches the dot product") { check_kernel(KernelType::Linear, 1.0, 3, 0.0); }

TEST_CASE("polynomial kernel matches (gamma x.z + coef0)^degree") {
  check_kernel(KernelType::Polynomial, 0.7, 1, 0.0);
  check_kernel(KernelType::Polynomial, 0.5, 2, 1.0);
  check_kernel(KernelType::Polynomial, 1.3, 3, -0.25);
  check_kernel(KernelType::Polynomial, 0.9, 4, 2.0);
}

TEST_CASE("rbf kernel matches exp(-gamma |x - z|^2)") {
  check_kernel(KernelType::RBF, 1.0, 3, 0.0);
  check_kernel(KernelType::RBF, 0.05, 3, 0.0);
  check_kernel(KernelType::RBF, 7.5, 3, 0.0);
}

TEST_CASE("rbf kernel has a unit diagonal and k(x, x) = 1") {
  const Kernel k(KernelType::RBF, 2.0);
  CHECK(k.unit_diagonal());
  CHECK(!Kernel(KernelType::Linear).unit_diagonal());
  const RowMatrix X = random_matrix(3, 4, 1);
  for (Index i = 0; i < X.rows(); ++i) {
    const Vector x = X.row(i).transpose();
    CHECK_NEAR(k.value(x, x), 1.0, 0.0);
    CHECK_NEAR(k.self(x.squaredNorm()), 1.0, 0.0);
  }
}

TEST_CASE("kernel_row through the SV store agrees with value") {
  const Kernel k(KernelType::RBF, 0.8);
  const Index d = 3;
  budgetkernel::SupportVectors sv(d, 1, 4);
  const RowMatrix P = random_matrix(6, d, 3);  // more than the capacity: the store grows
  for (Index i = 0; i < P.rows(); ++i) sv.push(P.row(i).transpose(), Vector::Constant(1, 0.5 + i), i);
  CHECK(sv.size() == 6);
  const Vector x = random_matrix(1, d, 9).row(0).transpose();
  Vector krow(sv.capacity());
  sv.kernel_row(k, x, x.squaredNorm(), krow);
  double f = 0.0;
  for (Index i = 0; i < sv.size(); ++i) {
    CHECK_NEAR(krow(i), k.value(P.row(i).transpose(), x), 1e-12);
    f += (0.5 + i) * krow(i);
  }
  Vector s(1);
  sv.scores(krow, s);
  CHECK_NEAR(s(0), f, 1e-12);
}

TEST_CASE("invalid kernel parameters throw") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS(Kernel(KernelType::RBF, 0.0));
  CHECK_THROWS(Kernel(KernelType::RBF, -1.0));
  CHECK_THROWS(Kernel(KernelType::RBF, nan));
  CHECK_THROWS(Kernel(KernelType::RBF, inf));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, 0));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, -2));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 0.0, 2));
  CHECK_THROWS(Kernel(KernelType::Polynomial, 1.0, 2, nan));
  CHECK_THROWS(Kernel(static_cast<KernelType>(7)));
}

TEST_MAIN()
