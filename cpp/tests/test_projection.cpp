// Tests of projection-based budget maintenance (BSGD paper 4.2, eq. 15-17) against dense
// brute-force solves: lazy activation (inactive until the first reduce, folding of dependent
// SVs on activation), the projection step itself, and exact save/load of both states.
#include "budgetkernel/budget/projection.hpp"
#include "budgetkernel/detail/random.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <random>
#include <vector>

using namespace budgetkernel;

namespace {

double gauss(std::mt19937_64& rng) {
  const double u1 = 1.0 - detail::uniform01(rng), u2 = detail::uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Vector random_vec(std::mt19937_64& rng, Index d, double scale = 1.0) {
  Vector x(d);
  for (Index j = 0; j < d; ++j) x(j) = scale * gauss(rng);
  return x;
}

// A store plus its Projection, fed exactly as a learner would: kernel row first (it scores
// the example), then push, then on_push with that row.
struct Fixture {
  Kernel k;
  SupportVectors sv;
  Projection proj;
  Vector krow;
  std::int64_t next_id = 0;
  double wnorm2 = 0.0;  // ||w||^2 kept from push and norm_change reports

  Fixture(const Kernel& kern, Index d, Index c, bool exact) : k(kern), sv(d, c, 4), proj(exact) {}

  MaintenanceResult reduce() {
    const MaintenanceResult r = proj.reduce(sv, k);
    wnorm2 += r.norm_change;
    return r;
  }
  // Activates the projection now (as the first reduce would, without the extra removal).
  MaintenanceResult activate() {
    const MaintenanceResult r = proj.activate(sv, k);
    wnorm2 += r.norm_change;
    return r;
  }

  void push(const Vector& x, const Vector& a) {
    const Index n = sv.size();
    if (krow.size() < n + 1) krow.resize(2 * (n + 1));
    sv.kernel_row(k, x, x.squaredNorm(), krow);
    const double kappa = k.self(x.squaredNorm());
    Vector f(sv.n_coef());
    sv.scores(krow, f);
    wnorm2 += 2.0 * a.dot(f) + a.squaredNorm() * kappa;  // ||w + a phi(x)||^2 - ||w||^2
    sv.push(x, a, next_id++);
    proj.on_push(sv, krow, kappa);
  }
};

Eigen::MatrixXd gram(const Kernel& k, const SupportVectors& sv) {
  const Index n = sv.size();
  Eigen::MatrixXd K(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) K(i, j) = k.value(sv.x(i), sv.x(j));
  return K;
}

// ||w_a - w_b||^2 summed over classes, by kernel expansion over the union of both SV sets.
double weight_sqdist(const Kernel& k, const SupportVectors& a, const SupportVectors& b) {
  const Index na = a.size(), nb = b.size(), n = na + nb, c = a.n_coef();
  std::vector<Eigen::RowVectorXd> X;
  Eigen::MatrixXd C(n, c);
  for (Index i = 0; i < na; ++i) X.push_back(a.x(i)), C.row(i) = a.alpha(i);
  for (Index i = 0; i < nb; ++i) X.push_back(b.x(i)), C.row(na + i) = -b.alpha(i);
  Eigen::MatrixXd K(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) K(i, j) = k.value(X[static_cast<std::size_t>(i)], X[static_cast<std::size_t>(j)]);
  return (C.transpose() * K * C).trace();
}

double weight_sqnorm(const Kernel& k, const SupportVectors& a) {
  const Eigen::MatrixXd A = a.A().topRows(a.size());
  return (A.transpose() * gram(k, a) * A).trace();
}

// Index (in `before`) of the SV whose id is missing from `after`.
Index removed_index(const SupportVectors& before, const SupportVectors& after) {
  for (Index i = 0; i < before.size(); ++i) {
    bool found = false;
    for (Index j = 0; j < after.size(); ++j) found = found || after.id(j) == before.id(i);
    if (!found) return i;
  }
  return -1;
}

// Brute force for projecting SV p of `sv`: beta = K_{-p}^{-1} k_p (dense LDLT of the
// explicitly built K_{-p}) and the eq. (17) residual k_pp - k_p^T beta.
struct Brute {
  std::vector<Index> rest;
  Vector beta;
  double residual = 0.0;
};
Brute brute_projection(const Kernel& k, const SupportVectors& sv, Index p) {
  Brute b;
  for (Index i = 0; i < sv.size(); ++i)
    if (i != p) b.rest.push_back(i);
  const Index m = static_cast<Index>(b.rest.size());
  Eigen::MatrixXd Km(m, m);
  Vector kp(m);
  for (Index i = 0; i < m; ++i) {
    const Index ri = b.rest[static_cast<std::size_t>(i)];
    kp(i) = k.value(sv.x(ri), sv.x(p));
    for (Index j = 0; j < m; ++j) Km(i, j) = k.value(sv.x(ri), sv.x(b.rest[static_cast<std::size_t>(j)]));
  }
  b.beta = m > 0 ? Vector(Km.ldlt().solve(kp)) : Vector(0);
  b.residual = k.value(sv.x(p), sv.x(p)) - kp.dot(b.beta);
  return b;
}

// Checks one reduce() against brute force; returns the index it removed (in `before`).
struct Errors {
  double dalpha = 0.0, deg = 0.0, norm = 0.0, eq17 = 0.0;
  void merge(const Errors& o) {
    dalpha = std::max(dalpha, o.dalpha), deg = std::max(deg, o.deg), norm = std::max(norm, o.norm);
    eq17 = std::max(eq17, o.eq17);
  }
};
// One reduce (or reduce_at(at) when at >= 0) checked against the dense solve.
Index check_reduce(Fixture& fx, Errors& err, Index at = -1) {
  const SupportVectors before = fx.sv;
  const MaintenanceResult r = at >= 0 ? fx.proj.reduce_at(fx.sv, at) : fx.proj.reduce(fx.sv, fx.k);
  const Index p = removed_index(before, fx.sv);
  CHECK(p >= 0);
  if (p < 0) return p;
  // Delta alpha (eq. 16) by a dense solve, applied to a copy, then the same swap-with-last.
  const Brute b = brute_projection(fx.k, before, p);
  SupportVectors expect = before;
  for (std::size_t i = 0; i < b.rest.size(); ++i)
    expect.alpha(b.rest[i]) += b.beta(static_cast<Index>(i)) * before.alpha(p);
  expect.erase(p);
  const Index n = fx.sv.size();
  CHECK(n == before.size() - 1);
  CHECK((expect.X().topRows(n) - fx.sv.X().topRows(n)).cwiseAbs().maxCoeff() == 0.0);
  Errors e;
  e.dalpha = n > 0 ? (expect.A().topRows(n) - fx.sv.A().topRows(n)).cwiseAbs().maxCoeff() : 0.0;
  e.deg = std::abs(r.degradation - weight_sqdist(fx.k, before, fx.sv));
  e.norm = std::abs(r.norm_change - (weight_sqnorm(fx.k, fx.sv) - weight_sqnorm(fx.k, before)));
  e.eq17 = std::abs(r.degradation - before.alpha(p).squaredNorm() * b.residual);
  CHECK(e.dalpha < 1e-10);
  CHECK(e.deg < 1e-10);
  CHECK(e.norm < 1e-10);
  CHECK(e.eq17 < 1e-10);
  CHECK(r.degradation >= 0.0);
  fx.wnorm2 += r.norm_change;
  err.merge(e);
  return p;
}

// Reference activation by dense solves, in the order Projection::activate documents: slot i
// against slots 0..i-1 (beta by LDLT of the explicitly built kernel matrix), dependent when
// s <= tol * max(k_ii, max_j k_jj beta_j^2); a dependent SV's coefficients go to slots
// 0..i-1 (alpha += beta alpha_i) and it is erased with swap-with-last, the moved SV is
// processed next. Returns the number of folds; `out` is the expected store.
Index reference_activation(const Kernel& k, const SupportVectors& in, double tol, SupportVectors& out) {
  out = in;
  Index folds = 0;
  for (Index i = 0; i < out.size();) {
    Eigen::MatrixXd Km(i, i);
    Vector kp(i);
    for (Index a = 0; a < i; ++a) {
      kp(a) = k.value(out.x(a), out.x(i));
      for (Index b = 0; b < i; ++b) Km(a, b) = k.value(out.x(a), out.x(b));
    }
    const Vector beta = i > 0 ? Vector(Km.ldlt().solve(kp)) : Vector(0);
    const double kii = k.value(out.x(i), out.x(i));
    const double s = kii - kp.dot(beta);
    double scale = kii;
    for (Index j = 0; j < i; ++j) scale = std::max(scale, Km(j, j) * beta(j) * beta(j));
    if (s > tol * scale) {
      ++i;
      continue;
    }
    const Eigen::RowVectorXd a = out.alpha(i);
    for (Index j = 0; j < i; ++j) out.alpha(j) += beta(j) * a;
    out.erase(i);
    ++folds;
  }
  return folds;
}

// min_j (residual of SV j against all the others) / k_jj, i.e. 1 / (k_jj (K^{-1})_jj) with a
// dense LDLT inverse of the brute-force kernel matrix.
double min_relative_residual(const Kernel& k, const SupportVectors& sv) {
  const Index n = sv.size();
  Eigen::MatrixXd K(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) K(i, j) = k.value(sv.x(i), sv.x(j));
  const Eigen::MatrixXd Ki = K.ldlt().solve(Eigen::MatrixXd::Identity(n, n));
  double worst = 1e300;
  for (Index j = 0; j < n; ++j) worst = std::min(worst, 1.0 / (K(j, j) * Ki(j, j)));
  return worst;
}

bool same_store(const SupportVectors& a, const SupportVectors& b) {
  const Index n = a.size();
  if (n != b.size()) return false;
  for (Index i = 0; i < n; ++i)
    if (a.id(i) != b.id(i)) return false;
  return a.X().topRows(n) == b.X().topRows(n) && a.A().topRows(n) == b.A().topRows(n);
}

// An input of the 4 x 4 checkerboard problem (uniform on [0, 4)^2, as datasets.checkerboard):
// dense 2-D data under a wide RBF gives an ill-conditioned kernel matrix. Labels are not needed.
Vector checkerboard_point(std::mt19937_64& g) {
  Vector x(2);
  x << 4.0 * detail::uniform01(g), 4.0 * detail::uniform01(g);
  return x;
}

}  // namespace

TEST_CASE("inactive until the first reduce: on_push is a no-op, nothing pending, 600 SVs untouched") {
  // The regime of the BSGD bug report: 2-D, RBF gamma = 2, 600 examples. Eagerly maintained,
  // ~70 of these pushes were flagged dependent and folded although the budget (600) was never
  // exceeded. Inactive, the store must stay exactly what was pushed.
  std::mt19937_64 g(4242);
  Fixture fx(Kernel(KernelType::RBF, 2.0), 2, 1, false);
  RowMatrix X(600, 2), A(600, 1);
  bool quiet = true;
  for (Index i = 0; i < 600; ++i) {
    const Vector x = checkerboard_point(g), a = random_vec(g, 1, 0.1);
    X.row(i) = x.transpose();
    A.row(i) = a.transpose();
    fx.push(x, a);
    quiet = quiet && !fx.proj.active() && !fx.proj.pending() && fx.proj.size() == 0 &&
            fx.proj.inverse().size() == 0 && fx.proj.kernel_matrix().size() == 0;
  }
  CHECK(quiet);
  CHECK(fx.sv.size() == 600);
  CHECK(fx.sv.X().topRows(600) == X);
  CHECK(fx.sv.A().topRows(600) == A);
  // One-argument reduce needs an active projection; activate() on an active one is an error.
  {
    SupportVectors copy = fx.sv;
    CHECK_THROWS(fx.proj.reduce(copy));
    CHECK(copy.size() == 600);
  }

  // What the first overflow would do to this store: activation folds the dependent SVs (and
  // removes nothing else, since that already shrank the store), exactly as the dense
  // reference does, and leaves a well-conditioned G over the rest.
  const SupportVectors before = fx.sv;
  SupportVectors expect;
  const Index ref_folds = reference_activation(fx.k, before, fx.proj.dependence_tolerance(), expect);
  const MaintenanceResult r = fx.reduce();
  const Index folds = before.size() - fx.sv.size();
  CHECK(fx.proj.active() && !fx.proj.pending());
  CHECK_THROWS(fx.proj.activate(fx.sv, fx.k));
  CHECK(folds >= 1);
  CHECK(folds == ref_folds);
  bool same_ids = expect.size() == fx.sv.size();
  for (Index i = 0; same_ids && i < fx.sv.size(); ++i) same_ids = expect.id(i) == fx.sv.id(i);
  CHECK(same_ids);
  const Index n = fx.sv.size();
  const double da = same_ids ? (expect.A().topRows(n) - fx.sv.A().topRows(n)).cwiseAbs().maxCoeff() : 1e300;
  const Eigen::MatrixXd K = gram(fx.k, fx.sv);
  const double res = fx.proj.inverse().residual(K);
  const double deg = weight_sqdist(fx.k, before, fx.sv);
  const double nc = weight_sqnorm(fx.k, fx.sv) - weight_sqnorm(fx.k, before);
  const double w2 = weight_sqnorm(fx.k, before);
  const double minres = min_relative_residual(fx.k, fx.sv);
  std::printf("  600 pushes, no reduce: store untouched. First reduce: activation folded %ld (reference %ld), "
              "max|alpha - reference| %.2g, degradation %.4g (|- brute| %.2g), norm_change %.4g (|- brute| %.2g), ||w||^2 %.4g, "
              "max|GK-I| %.2g, min residual/k_jj %.2g, %ld refactorisations\n",
              static_cast<long>(folds), static_cast<long>(ref_folds), da, r.degradation, std::abs(r.degradation - deg),
              r.norm_change, std::abs(r.norm_change - nc), w2, res, minres, static_cast<long>(fx.proj.refactor_count()));
  // The coefficients of so ill-conditioned an expansion are determined only to ~cond(K) eps
  // (two solvers differ in them); the functions they represent agree far more closely.
  const double wd = same_ids ? weight_sqdist(fx.k, expect, fx.sv) : 1e300;
  std::printf("  ||w - w_reference||^2 = %.2g (max|alpha_reference| %.3g)\n", wd,
              expect.A().topRows(n).cwiseAbs().maxCoeff());
  CHECK(wd < 1e-12 * std::max(1.0, w2));
  // Dense 2-D data: the expansions are ill-conditioned, so "exact" is relative to ||w||^2.
  CHECK(std::abs(r.degradation - deg) < 1e-8 * std::max(1.0, w2));
  CHECK(std::abs(r.norm_change - nc) < 1e-8 * std::max(1.0, w2));
  CHECK(res < 1e-4);
  CHECK(minres > fx.proj.dependence_tolerance() / static_cast<double>(n));
}

TEST_CASE("activation folds dependent SVs: exact degradation / norm_change, consistent G, then business as usual") {
  std::mt19937_64 g(99);
  double worst_deg = 0.0, worst_nc = 0.0, worst_da = 0.0, worst_res = 0.0, naive_gap = 0.0, worst_minres = 1.0;
  for (Index c : {Index(1), Index(3)})
    for (int trial = 0; trial < 6; ++trial) {
      // 30 random points (d = 3, RBF 0.5) with planted dependences that exercise the
      // swap-with-last order: slot 10 = x_3 (folded; the last SV, = x_20, moves into slot 10
      // and is appended there; then slot 20 = x_20 is folded onto it), slot 15 = x_5 + 3e-5 u
      // (a near duplicate: residual ~1e-9 < 1e-8), slot 28 = x_2, slot 29 = x_20.
      Fixture fx(Kernel(KernelType::RBF, 0.5), 3, c, trial % 2 == 1);
      std::vector<Vector> xs;
      for (int i = 0; i < 30; ++i) xs.push_back(random_vec(g, 3));
      xs[10] = xs[3];
      xs[15] = xs[5] + 3e-5 * random_vec(g, 3);
      xs[28] = xs[2];
      xs[29] = xs[20];
      for (int i = 0; i < 30; ++i) fx.push(xs[static_cast<std::size_t>(i)], random_vec(g, c));
      CHECK(!fx.proj.active() && !fx.proj.pending());
      const SupportVectors before = fx.sv;
      SupportVectors expect;
      const Index ref_folds = reference_activation(fx.k, before, fx.proj.dependence_tolerance(), expect);
      const MaintenanceResult r = fx.reduce();  // activates; folds >= 1, so nothing else goes
      const Index n = fx.sv.size();
      CHECK(ref_folds == 4);
      CHECK(before.size() - n == ref_folds);
      CHECK(fx.proj.active() && !fx.proj.pending() && fx.proj.size() == n && fx.proj.inverse().size() == n);
      bool same = expect.size() == n;
      for (Index i = 0; same && i < n; ++i) same = expect.id(i) == fx.sv.id(i);
      CHECK(same);
      CHECK(expect.X().topRows(n) == fx.sv.X().topRows(n));
      const double da = (expect.A().topRows(n) - fx.sv.A().topRows(n)).cwiseAbs().maxCoeff();
      const double deg = weight_sqdist(fx.k, before, fx.sv);
      const double nc = weight_sqnorm(fx.k, fx.sv) - weight_sqnorm(fx.k, before);
      const Eigen::MatrixXd K = gram(fx.k, fx.sv);
      const double res = fx.proj.inverse().residual(K);
      CHECK(da < 1e-8);
      CHECK(std::abs(r.degradation - deg) < 1e-10);
      CHECK(std::abs(r.norm_change - nc) < 1e-10);
      CHECK(r.degradation >= 0.0);
      CHECK(res < 1e-10);
      CHECK((fx.proj.kernel_matrix() - K).cwiseAbs().maxCoeff() < 1e-14);
      // Every remaining SV independent: residual against the rest >= tol k_jj / n (the rule).
      const double minres = min_relative_residual(fx.k, fx.sv);
      CHECK(minres > fx.proj.dependence_tolerance() / static_cast<double>(n));
      worst_minres = std::min(worst_minres, minres);
      // Reporting -degradation as norm_change (true for one fold of the newest SV) would be
      // wrong here: the near duplicate's residual is not orthogonal to the later SVs.
      naive_gap = std::max(naive_gap, std::abs(-r.degradation - nc));
      worst_deg = std::max(worst_deg, std::abs(r.degradation - deg));
      worst_nc = std::max(worst_nc, std::abs(r.norm_change - nc));
      worst_da = std::max(worst_da, da);
      worst_res = std::max(worst_res, res);
      // Business as usual afterwards: pushes maintain G, pending duplicates, brute-force reduces.
      Errors err;
      for (int s = 0; s < 10; ++s) {
        Vector x = random_vec(g, 3);
        if (s == 4) x = fx.sv.x(7).transpose();
        fx.push(x, random_vec(g, c));
        CHECK(fx.proj.pending() == (s == 4));
        check_reduce(fx, err);
        CHECK(fx.proj.size() == fx.sv.size() && fx.proj.inverse().size() == fx.sv.size());
      }
      CHECK(fx.proj.inverse().residual(gram(fx.k, fx.sv)) < 1e-10);
      CHECK(std::abs(fx.wnorm2 - weight_sqnorm(fx.k, fx.sv)) < 1e-9 * std::max(1.0, fx.wnorm2));
    }
  std::printf("  12 stores, 4 folds each: max |Delta alpha - reference| %.2g, |degradation - brute| %.2g,"
              " |norm_change - brute| %.2g (-degradation would be off by %.2g), max|GK-I| %.2g,"
              " min residual/k_jj %.2g\n",
              worst_da, worst_deg, worst_nc, naive_gap, worst_res, worst_minres);
  CHECK(naive_gap > 1e-8);
}

TEST_CASE("reduce: Delta alpha = K_{-p}^{-1} k_p alpha_p, degradation and norm_change = brute force (c = 1, 3)") {
  std::mt19937_64 g(2024);
  Errors err;
  int trials = 0;
  for (Index c : {Index(1), Index(3)})
    for (int trial = 0; trial < 15; ++trial) {
      Fixture fx(Kernel(KernelType::RBF, 0.5), 5, c, false);
      for (int i = 0; i < 25; ++i) fx.push(random_vec(g, 5), random_vec(g, c));
      CHECK(!fx.proj.pending() && !fx.proj.active());
      // The cheap rule: argmin ||alpha_j||^2 k_jj (= ||alpha_j||^2 for RBF).
      Index expect_p = 0;
      for (Index j = 1; j < fx.sv.size(); ++j)
        if (fx.sv.alpha(j).squaredNorm() < fx.sv.alpha(expect_p).squaredNorm()) expect_p = j;
      // The first reduce activates (nothing dependent here) and then removes exactly one SV.
      CHECK(check_reduce(fx, err) == expect_p);
      CHECK(fx.proj.active());
      ++trials;
      // A few more steps on the same store (push one, reduce one) keep matching.
      for (int s = 0; s < 5; ++s) {
        fx.push(random_vec(g, 5), random_vec(g, c));
        check_reduce(fx, err);
      }
      CHECK(fx.proj.inverse().residual(gram(fx.k, fx.sv)) < 1e-10);
    }
  // Polynomial kernel: k_jj varies, so the cheap rule really weighs by k_jj.
  for (int trial = 0; trial < 10; ++trial) {
    Fixture fx(Kernel(KernelType::Polynomial, 0.3, 3, 1.0), 6, 2, false);
    for (int i = 0; i < 20; ++i) fx.push(random_vec(g, 6), random_vec(g, 2));
    Index expect_p = 0;
    double best = 1e300;
    for (Index j = 0; j < fx.sv.size(); ++j) {
      const double v = fx.sv.alpha(j).squaredNorm() * fx.k.value(fx.sv.x(j), fx.sv.x(j));
      if (v < best) best = v, expect_p = j;
    }
    CHECK(check_reduce(fx, err) == expect_p);
  }
  std::printf("  %d RBF stores + 10 poly: max |Delta alpha - solve| %.3g, |degradation - brute| %.3g,"
              " |norm_change - brute| %.3g, |degradation - eq.17| %.3g\n",
              trials, err.dalpha, err.deg, err.norm, err.eq17);
}

TEST_CASE("reduce_at projects the caller's SV; project_candidate = dense solve, state unchanged") {
  std::mt19937_64 g(4242);
  Errors err;
  for (Index c : {Index(1), Index(3)})
    for (int trial = 0; trial < 10; ++trial) {
      Fixture fx(Kernel(KernelType::RBF, 0.4), 3, c, false);
      for (int i = 0; i < 15; ++i) fx.push(random_vec(g, 3), random_vec(g, c));
      CHECK(fx.activate().degradation == 0.0);
      // The inverse's diagonal is the eq. (17) residual: 1 / G_pp = brute-force residual.
      for (Index p = 0; p < fx.sv.size(); ++p)
        CHECK_NEAR(1.0 / fx.proj.inverse_diagonal(p), brute_projection(fx.k, fx.sv, p).residual, 1e-10);
      // A candidate point: beta = K^{-1} k and s = kappa - k^T beta by a dense solve; G untouched.
      const Vector x = random_vec(g, 3);
      Vector krow(fx.sv.size());
      fx.sv.kernel_row(fx.k, x, x.squaredNorm(), krow);
      const Eigen::MatrixXd G0 = fx.proj.inverse().inverse();
      double s = -1.0;
      const Vector& beta = fx.proj.project_candidate(krow, 1.0, s);
      const Vector dense = gram(fx.k, fx.sv).ldlt().solve(krow);
      CHECK((beta.head(fx.sv.size()) - dense).cwiseAbs().maxCoeff() < 1e-10);
      CHECK_NEAR(s, 1.0 - krow.dot(dense), 1e-12);
      CHECK(fx.proj.inverse().inverse() == G0);
      // reduce_at on a chosen, not the rule's, SV: every slot in turn on copies of the fixture.
      for (Index p = 0; p < fx.sv.size(); p += 4) {
        Fixture copy = fx;
        CHECK(check_reduce(copy, err, p) == p);
      }
      CHECK_THROWS(fx.proj.reduce_at(fx.sv, fx.sv.size()));
    }
  Projection inactive;
  SupportVectors empty(2, 1, 4);
  double s = 0.0;
  CHECK_THROWS(inactive.project_candidate(Vector::Zero(1), 1.0, s));
  CHECK_THROWS(inactive.reduce_at(empty, 0));
  std::printf("  reduce_at: max |Delta alpha - solve| %.3g, |degradation - brute| %.3g\n", err.dalpha, err.deg);
}

TEST_CASE("exact = true picks the brute-force argmin of eq. (17)") {
  std::mt19937_64 g(77);
  Errors err;
  int differs = 0, trials = 0;
  for (Index c : {Index(1), Index(3)})
    for (int trial = 0; trial < 20; ++trial) {
      Fixture fx(Kernel(KernelType::RBF, 0.3), 4, c, true);
      for (int i = 0; i < 20; ++i) fx.push(random_vec(g, 4), random_vec(g, c));
      // Active (no SV folded: the reduce below must be a plain projection).
      CHECK(fx.activate().degradation == 0.0 && fx.sv.size() == 20);
      // eq. (17) for every p by dense solves.
      Index best = 0, cheap = 0;
      double best_v = 1e300, second = 1e300;
      for (Index p = 0; p < fx.sv.size(); ++p) {
        const double v = fx.sv.alpha(p).squaredNorm() * brute_projection(fx.k, fx.sv, p).residual;
        if (v < best_v) second = best_v, best_v = v, best = p;
        else if (v < second) second = v;
        if (fx.sv.alpha(p).squaredNorm() < fx.sv.alpha(cheap).squaredNorm()) cheap = p;
      }
      CHECK(second - best_v > 1e-9);  // no near-tie: the argmin is well defined
      differs += best != cheap;
      const Index p = check_reduce(fx, err);
      CHECK(p == best);
      ++trials;
    }
  std::printf("  %d trials, exact argmin != smallest-SV rule in %d of them; max |degradation - eq.17 min| %.3g\n",
              trials, differs, err.eq17);
  CHECK(differs >= 5);
}

TEST_CASE("pending (active): a duplicate SV is not appended to G and is projected by the next reduce") {
  std::mt19937_64 g(5);
  for (Index c : {Index(1), Index(3)}) {
    Fixture fx(Kernel(KernelType::RBF, 0.5), 3, c, false);
    for (int i = 0; i < 10; ++i) fx.push(random_vec(g, 3), random_vec(g, c));
    fx.activate();
    CHECK(fx.proj.active() && fx.sv.size() == 10);
    const Vector dup = fx.sv.x(4).transpose();
    const Vector a = random_vec(g, c);
    fx.push(dup, a);
    CHECK(fx.proj.pending());
    CHECK(std::abs(fx.proj.pending_schur()) < 1e-12);
    CHECK(fx.proj.inverse().size() == 10);
    CHECK(fx.proj.size() == 11);
    // Another push before reduce() is a protocol error, and so is saving.
    SupportVectors copy = fx.sv;
    copy.push(random_vec(g, 3), a, 999);
    CHECK_THROWS(fx.proj.on_push(copy, fx.krow, 1.0));
    FieldMap fm;
    CHECK_THROWS(fx.proj.save(fm, "p."));
    const SupportVectors before = fx.sv;
    Errors err;
    const Index p = check_reduce(fx, err);  // brute force as for any reduce
    CHECK(p == 10);                         // exactly the pending SV
    CHECK(!fx.proj.pending());
    // Its coefficients went to its twin: alpha_4 += a.
    CHECK((fx.sv.alpha(4) - before.alpha(4) - a.transpose()).cwiseAbs().maxCoeff() < 1e-10);
    CHECK(fx.proj.inverse().size() == 10);
    CHECK(fx.proj.inverse().residual(gram(fx.k, fx.sv)) < 1e-10);
    // Business as usual afterwards.
    fx.push(random_vec(g, 3), random_vec(g, c));
    CHECK(!fx.proj.pending());
    check_reduce(fx, err);
    std::printf("  c=%ld: degradation errors %.3g, Delta alpha errors %.3g\n", static_cast<long>(c), err.deg,
                err.dalpha);
  }
}

TEST_CASE("pending (active): numerically dependent points of a tiny-gamma RBF") {
  // gamma = 1e-6 in 1-D: k(x, z) = 1 - gamma (x - z)^2 + ..., so three points already span
  // the kernel's effective feature space to ~1e-12.
  std::mt19937_64 g(17);
  Fixture fx(Kernel(KernelType::RBF, 1e-6), 1, 2, false);
  fx.push(random_vec(g, 1), random_vec(g, 2));
  fx.push(random_vec(g, 1), random_vec(g, 2));
  fx.activate();
  CHECK(fx.proj.active() && !fx.proj.pending() && fx.sv.size() == 2);
  int pendings = 0;
  double worst_s = 0.0;
  for (int i = 0; i < 20; ++i) {
    fx.push(random_vec(g, 1), random_vec(g, 2));
    if (fx.proj.pending()) {
      ++pendings;
      const double s = fx.proj.pending_schur();
      worst_s = std::max(worst_s, s);
      const SupportVectors before = fx.sv;
      const MaintenanceResult r = fx.proj.reduce(fx.sv, fx.k);
      CHECK(removed_index(before, fx.sv) == before.size() - 1);
      CHECK(r.degradation == before.alpha(before.size() - 1).squaredNorm() * std::max(s, 0.0));
      CHECK(r.norm_change == -r.degradation);
      // The function barely changes (|Delta f(x)| <= ||Delta w|| sqrt(k(x, x)) ~ 1e-5 at most).
      double worst = 0.0;
      for (int t = 0; t < 5; ++t) {
        const Vector x = random_vec(g, 1);
        Eigen::RowVectorXd fb = Eigen::RowVectorXd::Zero(2), fa = Eigen::RowVectorXd::Zero(2);
        for (Index j = 0; j < before.size(); ++j) fb += fx.k.value(before.x(j), x.transpose()) * before.alpha(j);
        for (Index j = 0; j < fx.sv.size(); ++j) fa += fx.k.value(fx.sv.x(j), x.transpose()) * fx.sv.alpha(j);
        worst = std::max(worst, (fa - fb).cwiseAbs().maxCoeff());
      }
      CHECK(worst < 1e-4);
    }
  }
  std::printf("  %d of 20 pushes were numerically dependent (largest Schur complement %.2g); G size %ld\n",
              pendings, worst_s, static_cast<long>(fx.proj.inverse().size()));
  CHECK(worst_s < 1e-6);
  CHECK(pendings >= 15);
  CHECK(fx.proj.inverse().size() == fx.sv.size());

  // The same 22 points pushed while inactive: activation folds what eager maintenance folded.
  std::mt19937_64 h(17);
  Fixture fl(Kernel(KernelType::RBF, 1e-6), 1, 2, false);
  for (int i = 0; i < 22; ++i) fl.push(random_vec(h, 1), random_vec(h, 2));
  const SupportVectors before = fl.sv;
  const MaintenanceResult r = fl.reduce();
  std::printf("  lazily: activation folded %ld of 22 (|degradation - brute| %.2g, |norm_change - brute| %.2g)\n",
              static_cast<long>(22 - fl.sv.size()), std::abs(r.degradation - weight_sqdist(fl.k, before, fl.sv)),
              std::abs(r.norm_change - (weight_sqnorm(fl.k, fl.sv) - weight_sqnorm(fl.k, before))));
  CHECK(fl.sv.size() <= 3 && fl.proj.inverse().size() == fl.sv.size());
  CHECK(std::abs(r.degradation - weight_sqdist(fl.k, before, fl.sv)) < 1e-9);
}

TEST_CASE("many push/reduce cycles: G, K and ||w||^2 stay consistent with the store") {
  struct Case {
    Index d;
    double gamma;
    Index c;
    bool exact;
    double max_res;  // bound on max|GK - I| at the checkpoints
  };
  // Well-conditioned (d = 5) and badly conditioned (few dimensions: cond(K) up to ~1e8-1e11)
  // stores. In the latter a fresh inverse itself has residual up to ~1e-6, so the bound is
  // "no worse than the raised drift bar", and ||w||^2 must still track the brute force.
  const Case cases[] = {{5, 0.5, 1, false, 1e-8}, {5, 0.5, 3, true, 1e-8}, {3, 0.5, 3, false, 1e-8},
                        {2, 1.0, 1, true, 1e-4},  {2, 0.1, 3, false, 1e-4}, {1, 1.0, 1, true, 1e-4}};
  for (const Case& cs : cases) {
    std::mt19937_64 g(100 + static_cast<std::uint64_t>(cs.d));
    Fixture fx(Kernel(KernelType::RBF, cs.gamma), cs.d, cs.c, cs.exact);
    const Index budget = 40;
    double worst_res = 0.0, worst_fresh = 0.0, worst_k = 0.0, total_deg = 0.0;
    int pendings = 0;
    Index activation_removed = -1;
    for (int step = 0; step < 4000; ++step) {
      Vector x = random_vec(g, cs.d);
      if (step % 97 == 50) x = fx.sv.x(detail::uniform_index(g, fx.sv.size())).transpose();  // a duplicate
      fx.push(x, random_vec(g, cs.c, 0.3));
      pendings += fx.proj.pending();
      if (fx.sv.size() > budget || fx.proj.pending()) {
        const bool was_active = fx.proj.active();
        const Index n = fx.sv.size();
        const MaintenanceResult r = fx.reduce();
        if (!was_active) activation_removed = n - fx.sv.size();  // 1, or the number of folded SVs
        total_deg += r.degradation;
        CHECK(r.degradation >= 0.0);
      }
      CHECK(fx.sv.size() <= budget);
      CHECK(fx.proj.active() == (step >= budget));
      if (fx.proj.active())
        CHECK(fx.proj.size() == fx.sv.size() && fx.proj.inverse().size() == fx.sv.size());
      if (step % 100 == 99) {
        const Eigen::MatrixXd K = gram(fx.k, fx.sv);
        const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(K.rows(), K.cols());
        worst_k = std::max(worst_k, (fx.proj.kernel_matrix() - K).cwiseAbs().maxCoeff());
        worst_res = std::max(worst_res, fx.proj.inverse().residual(K));
        worst_fresh = std::max(worst_fresh, (K.ldlt().solve(I) * K - I).cwiseAbs().maxCoeff());
      }
    }
    const double wn = weight_sqnorm(fx.k, fx.sv);
    std::printf("  d=%ld gamma=%g c=%ld exact=%d: activation removed %ld, %d pending, %ld refactorisations,"
                " final size %ld; max|K - K_brute| %.2g, max|GK-I| %.2g (fresh LDLT inverse: %.2g); ||w||^2 tracked"
                " %.12g vs brute %.12g\n",
                static_cast<long>(cs.d), cs.gamma, static_cast<long>(cs.c), static_cast<int>(cs.exact),
                static_cast<long>(activation_removed), pendings, static_cast<long>(fx.proj.refactor_count()),
                static_cast<long>(fx.sv.size()), worst_k, worst_res, worst_fresh, fx.wnorm2, wn);
    CHECK(activation_removed >= 1);
    CHECK(pendings >= 40);  // at least the planted duplicates
    CHECK(worst_k < 1e-13);
    CHECK(worst_res < cs.max_res);
    CHECK(std::abs(fx.wnorm2 - wn) < 1e-8 * std::max(1.0, wn));
    CHECK(total_deg > 0.0);
  }
}

TEST_CASE("activation reproduces the maintained inverse; deactivate; drift control refactors") {
  std::mt19937_64 g(3);
  Fixture fx(Kernel(KernelType::RBF, 0.5), 4, 3, true);
  for (int step = 0; step < 500; ++step) {
    fx.push(random_vec(g, 4), random_vec(g, 3));
    if (fx.sv.size() > 30) fx.reduce();
  }
  // A fresh projection activated on (a copy of) the store: same K, G to rounding.
  SupportVectors s1 = fx.sv, s2 = fx.sv;
  Projection p2(true);
  CHECK(p2.activate(s2, fx.k).degradation == 0.0);
  CHECK(same_store(s2, fx.sv) && !p2.pending());
  const Eigen::MatrixXd G1 = fx.proj.inverse().inverse(), G2 = p2.inverse().inverse();
  CHECK((G1 - G2).cwiseAbs().maxCoeff() < 1e-10 * G1.cwiseAbs().maxCoeff());
  CHECK((fx.proj.kernel_matrix() - p2.kernel_matrix()).cwiseAbs().maxCoeff() < 1e-14);
  // Both reduce the same way.
  const MaintenanceResult r1 = fx.proj.reduce(s1, fx.k), r2 = p2.reduce(s2, fx.k);
  CHECK_NEAR(r1.degradation, r2.degradation, 1e-12);
  CHECK((s1.A().topRows(s1.size()) - s2.A().topRows(s2.size())).cwiseAbs().maxCoeff() < 1e-10);

  // deactivate(): back to inactive; the next reduce re-activates exactly as a fresh object.
  SupportVectors s3 = s2, s4 = s2;
  p2.deactivate();
  CHECK(!p2.active() && p2.size() == 0 && p2.inverse().size() == 0);
  Projection p3(true);
  const MaintenanceResult r3 = p2.reduce(s3, fx.k), r4 = p3.reduce(s4, fx.k);
  CHECK(r3.degradation == r4.degradation && same_store(s3, s4));
  CHECK(p2.inverse().inverse() == p3.inverse().inverse() && p2.kernel_matrix() == p3.kernel_matrix());

  // Drift control: a vanishing tolerance forces refactorisations; results stay exact.
  Fixture fz(Kernel(KernelType::RBF, 0.5), 4, 1, false);
  fz.proj.set_check_interval(10);
  fz.proj.set_drift_tolerance(1e-300);
  Errors err;
  for (int step = 0; step < 300; ++step) {
    fz.push(random_vec(g, 4), random_vec(g, 1));
    if (fz.sv.size() > 15) check_reduce(fz, err);
  }
  std::printf("  drift tolerance 1e-300, check every 10 updates: %ld refactorisations in ~585 updates\n",
              static_cast<long>(fz.proj.refactor_count()));
  CHECK(fz.proj.refactor_count() >= 1);
  CHECK(fz.proj.check_drift(true) < 1e-12);
}

TEST_CASE("save / load: both states continue bit for bit") {
  // Drive a projection as a learner would (push, on_push, reduce when over the budget or
  // pending) on an ill-conditioned stream (2-D RBF, planted duplicates: folds, pendings and
  // refactorisations all happen after the save), save at step `at`, load into a fresh
  // projection with a copy of the store, continue both on the same stream, compare exactly.
  struct Case {
    int at;
    bool exact;
    Index c;
  };
  const Case cases[] = {{25, false, 1}, {25, true, 3}, {40, false, 3}, {700, true, 1}, {1200, false, 3}};
  const Index budget = 40;
  for (const Case& cs : cases) {
    std::mt19937_64 g(555);
    std::vector<Vector> xs, as;
    for (int i = 0; i < 2000; ++i) {
      xs.push_back(random_vec(g, 2));
      as.push_back(random_vec(g, cs.c, 0.3));
    }
    auto feed = [&](Fixture& f, int step, std::vector<double>& log) {
      Vector x = xs[static_cast<std::size_t>(step)];
      if (step % 37 == 20) x = f.sv.x(step % f.sv.size()).transpose();  // a duplicate
      f.push(x, as[static_cast<std::size_t>(step)]);
      if (f.sv.size() > budget || f.proj.pending()) {
        const MaintenanceResult r = f.reduce();
        log.push_back(r.degradation);
        log.push_back(r.norm_change);
      }
    };
    Fixture fa(Kernel(KernelType::RBF, 1.0), 2, cs.c, cs.exact);
    fa.proj.set_check_interval(7);  // non-default settings travel with the file
    std::vector<double> la, lb;
    for (int step = 0; step < cs.at; ++step) feed(fa, step, la);
    const bool was_active = fa.proj.active();
    FieldMap fm;
    fa.proj.save(fm, "proj.");
    const FieldMap back = FieldMap::from_bytes(fm.to_bytes());
    Fixture fb(Kernel(KernelType::RBF, 1.0), 2, cs.c, cs.exact);
    fb.sv = fa.sv;
    fb.next_id = fa.next_id;
    fb.proj.load(back, "proj.", fb.sv);
    CHECK(fb.proj.active() == was_active && fb.proj.check_interval() == 7);
    const Index refactors_at_save = fa.proj.refactor_count();
    CHECK(la.empty() == !was_active);  // no reduce while inactive
    la.clear();
    for (int step = cs.at; step < 2000; ++step) {
      feed(fa, step, la);
      feed(fb, step, lb);
    }
    const Index n = fa.sv.size();
    const bool same = same_store(fa.sv, fb.sv) && la == lb && fa.proj.active() && fb.proj.active() &&
                      fa.proj.kernel_matrix() == fb.proj.kernel_matrix() &&
                      fa.proj.inverse().inverse() == fb.proj.inverse().inverse() &&
                      fa.proj.refactor_count() == fb.proj.refactor_count();
    std::printf("  saved at step %d (%s, exact=%d, c=%ld): %ld refactorisations after the save, final size %ld;"
                " store, G, K and every reported degradation bitwise equal: %d\n",
                cs.at, was_active ? "active" : "inactive", static_cast<int>(cs.exact), static_cast<long>(cs.c),
                static_cast<long>(fa.proj.refactor_count() - refactors_at_save), static_cast<long>(n),
                static_cast<int>(same));
    CHECK(was_active == (cs.at > budget));
    CHECK(same);
  }

  // Validation of what is read.
  std::mt19937_64 g(8);
  Fixture fx(Kernel(KernelType::RBF, 0.5), 3, 1, false);
  for (int i = 0; i < 12; ++i) fx.push(random_vec(g, 3), random_vec(g, 1));
  fx.activate();
  FieldMap ok;
  fx.proj.save(ok, "p.");
  Projection p;
  p.load(ok, "p.", fx.sv);
  CHECK(p.active() && p.inverse().inverse() == fx.proj.inverse().inverse());
  SupportVectors smaller = fx.sv;
  smaller.erase(0);
  CHECK_THROWS(p.load(ok, "p.", smaller));  // size mismatch
  CHECK_THROWS(p.load(ok, "q.", fx.sv));    // missing fields
  FieldMap bad = ok;
  bad.set_int("p.active", 2);
  CHECK_THROWS(p.load(bad, "p.", fx.sv));
  bad = ok;
  Eigen::MatrixXd K = fx.proj.kernel_matrix();
  K(0, 1) += 1e-3;  // not symmetric
  bad.set_matrix("p.K", K);
  CHECK_THROWS(p.load(bad, "p.", fx.sv));
  bad = ok;
  bad.set("p.dep_tol", 2.0);
  CHECK_THROWS(p.load(bad, "p.", fx.sv));
  // An inactive file carries no K / G.
  Projection idle;
  FieldMap off;
  idle.save(off, "p.");
  CHECK(!off.has("p.K") && !off.has("p.G") && off.get_i64("p.active") == 0);
  p.load(off, "p.", fx.sv);
  CHECK(!p.active() && p.size() == 0);
}

TEST_CASE("edge cases: single SV, out-of-sync calls") {
  std::mt19937_64 g(1);
  Fixture fx(Kernel(KernelType::Polynomial, 1.0, 2, 1.0), 2, 2, true);
  const Vector x = random_vec(g, 2), a = random_vec(g, 2);
  CHECK_THROWS(fx.proj.reduce(fx.sv, fx.k));  // empty, inactive
  CHECK(!fx.proj.active());
  fx.push(x, a);
  const double kxx = fx.k.value(x, x);
  const MaintenanceResult r = fx.proj.reduce(fx.sv, fx.k);  // activates, then projects onto nothing
  CHECK(fx.sv.size() == 0 && fx.proj.size() == 0 && fx.proj.active());
  CHECK_NEAR(r.degradation, a.squaredNorm() * kxx, 1e-12 * kxx);
  CHECK_NEAR(r.norm_change, -a.squaredNorm() * kxx, 1e-12 * kxx);
  CHECK_THROWS(fx.proj.reduce(fx.sv, fx.k));  // empty
  fx.sv.push(x, a, 1);                        // pushed without on_push
  CHECK_THROWS(fx.proj.reduce(fx.sv, fx.k));
  fx.sv.push(x, a, 2);
  CHECK_THROWS(fx.proj.on_push(fx.sv, fx.krow, kxx));
  fx.proj.clear();
  CHECK(!fx.proj.active());
  fx.sv.clear();
  fx.push(x, a);
  CHECK(fx.proj.size() == 0 && !fx.proj.pending());
  fx.activate();
  CHECK(fx.proj.size() == 1 && fx.proj.active() && !fx.proj.pending());
  // A zero vector under the linear kernel has k(x, x) = 0: folded (onto nothing) at activation.
  Fixture fz(Kernel(KernelType::Linear), 2, 1, false);
  Vector z(2), one(1), u(2);
  z << 0.0, 0.0;
  one << 1.0;
  u << 1.0, 2.0;
  fz.push(z, one);
  fz.push(u, one);
  const MaintenanceResult rz = fz.reduce();
  CHECK(fz.sv.size() == 1 && fz.sv.x(0) == u.transpose() && rz.degradation == 0.0 && rz.norm_change == 0.0);
}

TEST_CASE("pending: a new SV that would make an old one dependent (second term of the rule)") {
  // Linear kernel in R^3: x1 = e1, x2 = e1 + eps e2 (residual eps^2 = 1e-4: kept), then
  // x3 = e2 + delta e3: its own residual delta^2 = 1e-6 passes the first term (> 1e-8 kappa),
  // but beta = K^{-1} k = (-1/eps, 1/eps) and with x3 in, x2 = x1 + eps (x3 - delta e3) would
  // have residual ~ (eps delta)^2 = 1e-10 < 1e-8 k_22: the second term flags it
  // (s = 1e-6 <= 1e-8 * max_j k_jj beta_j^2 = 1e-4).
  const double eps = 1e-2, delta = 1e-3;
  Vector x1(3), x2(3), x3(3);
  x1 << 1.0, 0.0, 0.0;
  x2 << 1.0, eps, 0.0;
  x3 << 0.0, 1.0, delta;
  Vector a1(2), a2(2), a3(2);
  a1 << 0.5, -1.0;
  a2 << 1.5, 0.25;
  a3 << -0.75, 2.0;
  Fixture fx(Kernel(KernelType::Linear), 3, 2, false);
  fx.push(x1, a1);
  fx.push(x2, a2);
  fx.activate();
  CHECK(fx.sv.size() == 2 && !fx.proj.pending());
  fx.push(x3, a3);
  CHECK(fx.proj.pending());
  // K's own rounding (1 + eps^2 etc.) limits the relative accuracy of s to ~1e-8 here.
  CHECK_NEAR(fx.proj.pending_schur(), delta * delta, 1e-5 * delta * delta);
  const SupportVectors before = fx.sv;
  const MaintenanceResult r = fx.proj.reduce(fx.sv, fx.k);
  CHECK(removed_index(before, fx.sv) == 2);
  CHECK_NEAR(r.degradation, a3.squaredNorm() * delta * delta, 1e-5 * r.degradation);
  CHECK_NEAR(r.degradation, weight_sqdist(fx.k, before, fx.sv), 1e-5 * r.degradation);
  CHECK(r.norm_change == -r.degradation);
  // Delta alpha = alpha_3 beta, beta = (-1/eps, 1/eps).
  CHECK((fx.sv.alpha(0) - before.alpha(0) + a3.transpose() / eps).cwiseAbs().maxCoeff() < 1e-6);
  CHECK((fx.sv.alpha(1) - before.alpha(1) - a3.transpose() / eps).cwiseAbs().maxCoeff() < 1e-6);
  // Lazily (all three pushed while inactive): activation folds x3 the same way.
  Fixture fl(Kernel(KernelType::Linear), 3, 2, false);
  fl.push(x1, a1);
  fl.push(x2, a2);
  fl.push(x3, a3);
  const MaintenanceResult rl = fl.reduce();
  CHECK(fl.sv.size() == 2 && fl.sv.A().topRows(2) == fx.sv.A().topRows(2));
  CHECK_NEAR(rl.degradation, r.degradation, 1e-6 * r.degradation);
  CHECK_NEAR(rl.norm_change, weight_sqnorm(fl.k, fl.sv) - weight_sqnorm(fl.k, before), 1e-9);
  // With a tolerance small enough that neither term fires (1e-13 * 1e4 < 1e-6), x3 is appended.
  Fixture fy(Kernel(KernelType::Linear), 3, 2, false);
  fy.proj.set_dependence_tolerance(1e-13);
  fy.push(x1, a1);
  fy.push(x2, a2);
  fy.push(x3, a3);
  fy.activate();
  CHECK(fy.sv.size() == 3 && !fy.proj.pending());
  CHECK(fy.proj.inverse().size() == 3);
}

TEST_MAIN()
