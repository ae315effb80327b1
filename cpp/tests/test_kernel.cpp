// Kernel values against closed forms: value, from_dot and row agree with the direct formulas.
#include <budgetkernel/kernel.hpp>
#include <budgetkernel/sv_store.hpp>

#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "test_oracles.hpp"
#include "test_util.hpp"

using budgetkernel::Index;
using budgetkernel::Kernel;
using budgetkernel::KernelType;
using budgetkernel::RowMatrix;
using budgetkernel::Vector;

namespace {

using bk_test::random_matrix;

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

namespace {
/// Distance from a to b in units of b's spacing (the smallest subnormal for b = 0 and below).
double ulps(double a, double b) {
  if (a == b) return 0.0;
  const double spacing = std::max(std::nextafter(b, std::numeric_limits<double>::infinity()) - b,
                                  std::numeric_limits<double>::denorm_min());
  return std::fabs(a - b) / spacing;
}

/// exp(x) for x <= 0 through the RBF map: with |s|^2 = |x|^2 = 0, gamma = 1 and the dot
/// product x/2, the map's argument is -max(0, -x) = x exactly.
Vector rbf_exp_of(const Vector& x) {
  Vector out = 0.5 * x;
  const Vector zero = Vector::Zero(x.size());
  budgetkernel::detail::rbf_finish(zero.data(), x.size(), 0.0, 1.0, out.data());
  return out;
}
}  // namespace

TEST_CASE("the RBF map's exp is within 1 ulp of std::exp on [-746, 0], edges included") {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> wide(-746.0, 0.0), unit(-1.0, 0.0), tiny(-1e-10, 0.0);
  const Index n = 3000001;  // odd: the last value goes through the padded tail
  Vector x(n);
  for (Index i = 0; i < n; ++i) x(i) = i % 3 == 0 ? wide(rng) : i % 3 == 1 ? unit(rng) : tiny(rng);
  const Vector e = rbf_exp_of(x);
  double worst = 0.0;
  for (Index i = 0; i < n; ++i) worst = std::max(worst, ulps(e(i), std::exp(x(i))));
#if defined(BUDGETKERNEL_RBF_EXP_AVX2)
  const char* path = "AVX2+FMA";
#elif defined(BUDGETKERNEL_RBF_EXP_SSE2)
  const char* path = "SSE2";
#else
  const char* path = "scalar";
#endif
  std::printf("  max error %.2f ulp over %lld arguments (%s path)\n", worst, static_cast<long long>(n), path);
  CHECK(worst <= 1.0);
  // The scalar path of the builds without SSE2 (aarch64), run here too: the SSE2 sequence one
  // value at a time, so equal to the SSE2 path bit for bit where no multiply-add is fused (the
  // AVX2 path fuses them: there the bound against std::exp is what holds).
  double worst1 = 0.0;
  Index differ = 0;
  for (Index i = 0; i < n; ++i) {
    const double v = budgetkernel::detail::rbf_exp1(x(i));
    worst1 = std::max(worst1, ulps(v, std::exp(x(i))));
    differ += v != e(i);
  }
  std::printf("  scalar path: max error %.2f ulp, %lld values differ from the %s path\n", worst1,
              static_cast<long long>(differ), path);
  CHECK(worst1 <= 1.0);
#if !defined(BUDGETKERNEL_RBF_EXP_AVX2) && !defined(__FMA__) && !defined(__ARM_FEATURE_FMA)
  CHECK(differ == 0);
#endif
  // Edges: exactly 1 at 0, the normal/subnormal boundary, the last subnormals, underflow to 0,
  // -inf (an overflowing distance) to 0, NaN propagated.
  const double inf = std::numeric_limits<double>::infinity();
  Vector edge(11);
  edge << 0.0, -0.0, -1e-300, -708.39, -708.4, -745.0, -745.13, -745.2, -746.0, -1e4, -inf;
  const Vector ee = rbf_exp_of(edge);
  for (Index i = 0; i < edge.size(); ++i) {
    CHECK(ulps(ee(i), std::exp(edge(i))) <= 1.0);
    CHECK(ulps(budgetkernel::detail::rbf_exp1(edge(i)), std::exp(edge(i))) <= 1.0);
  }
  CHECK(budgetkernel::detail::rbf_exp1(0.0) == 1.0 && budgetkernel::detail::rbf_exp1(-inf) == 0.0);
  CHECK(ee(0) == 1.0 && ee(1) == 1.0 && ee(10) == 0.0);
  Vector nan(1);
  nan << std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(rbf_exp_of(nan)(0)));
  CHECK(std::isnan(budgetkernel::detail::rbf_exp1(nan(0))));
}

TEST_CASE("an RBF kernel value does not depend on its position in the row") {
  const Kernel k(KernelType::RBF, 0.7);
  const RowMatrix P = random_matrix(9, 2, 5);
  const Vector x = random_matrix(1, 2, 6).row(0).transpose();
  Vector sq(9), row(9);
  for (Index i = 0; i < 9; ++i) sq(i) = P.row(i).squaredNorm();
  // Row 0 at every position 0..8 of rows of length 1..9 (the others are other points).
  for (Index len = 1; len <= 9; ++len)
    for (Index pos = 0; pos < len; ++pos) {
      RowMatrix S = P.topRows(len);
      Vector s = sq.head(len);
      S.row(0).swap(S.row(pos));
      std::swap(s(0), s(pos));
      k.row(S, s, len, x, x.squaredNorm(), row);
      Vector ref(1);
      k.row(RowMatrix(P.topRows(1)), Vector(sq.head(1)), 1, x, x.squaredNorm(), ref);
      CHECK(row(pos) == ref(0));
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

TEST_CASE("rows to learn from: a nonzero k(x, x) below 1e-200 is refused, an exact zero is not") {
  using budgetkernel::detail::learn_row_problem;
  using budgetkernel::detail::row_problem;
  const Kernel lin(KernelType::Linear), rbf(KernelType::RBF, 1.0);
  const Kernel poly(KernelType::Polynomial, 1.0, 3, 0.0), poly1(KernelType::Polynomial, 1.0, 3, 1.0);
  const double tiny[2] = {1e-155, 0.0};  // |x|^2 = 1e-310: subnormal
  const double small[2] = {1e-90, 1e-90};  // |x|^2 = 2e-180
  const double zero[2] = {0.0, 0.0};
  const double under[2] = {1e-170, 0.0};  // |x|^2 underflows to exactly 0
  CHECK(row_problem(tiny, 2) == nullptr);  // scoring it is fine
  CHECK(learn_row_problem(lin, tiny, 2) != nullptr);
  CHECK(learn_row_problem(lin, small, 2) == nullptr);
  CHECK(learn_row_problem(lin, zero, 2) == nullptr);
  CHECK(learn_row_problem(lin, under, 2) == nullptr);
  CHECK(learn_row_problem(rbf, tiny, 2) == nullptr);  // k(x, x) = 1
  const double p_small[2] = {1e-34, 1e-34};  // homogeneous cubic: k(x, x) = (2e-68)^3 = 8e-204
  CHECK(learn_row_problem(poly, p_small, 2) != nullptr);
  CHECK(learn_row_problem(poly1, p_small, 2) == nullptr);  // k(x, x) ~ 1
  // Still the usual checks first.
  const double nan2[2] = {std::numeric_limits<double>::quiet_NaN(), 0.0};
  CHECK(std::string(learn_row_problem(lin, nan2, 2)).find("NaN") != std::string::npos);
}

#if defined(BUDGETKERNEL_TEST_NEEDS_AVX2)
// The AVX2+FMA build of this file (test_kernel_avx2): nothing to test on a CPU without them.
int main() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("CPU without AVX2/FMA: skipped\n");
    return 0;
  }
  return bk_test::run_all();
}
#else
TEST_MAIN()
#endif
