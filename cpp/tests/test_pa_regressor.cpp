// Tests of learners/pa_regressor.hpp: the closed forms of PA, PA-I, PA-II regression
// (Crammer et al. 2006, section 5), the unbudgeted reduction, every budgeted step (BPA-S,
// BPA-NN, BPA-P) against a brute-force solution of the same constrained problem, SPA's
// sampling with probability 1, the averaged regressor, model files and resuming, bad input.
#include "test_oracles.hpp"
#include "test_util.hpp"

#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace budgetkernel;

namespace {

struct Data {
  RowMatrix X;
  Vector y;
};

/// A noisy sine of the first feature, with d features in [-2, 2].
Data sine(Index n, Index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::normal_distribution<double> noise(0.0, 0.1);
  Data s{RowMatrix(n, d), Vector(n)};
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) s.X(i, j) = u(rng);
    s.y(i) = 1.0 + std::sin(2.0 * s.X(i, 0)) + noise(rng);
  }
  return s;
}

PARegressorParams params(int pa_type, Index budget, BPAVariant v = BPAVariant::NearestNeighbor) {
  PARegressorParams p;
  p.kernel = Kernel(KernelType::RBF, 0.7);
  p.C = 0.5;
  p.pa_type = pa_type;
  p.epsilon = 0.1;
  p.budget = budget;
  p.variant = v;
  p.fit_intercept = false;
  return p;
}

RowMatrix svs(const PARegressor& r) { return r.support_vectors().X().topRows(r.support_vectors().size()); }
Vector coefs(const PARegressor& r) { return r.coefficients().col(0); }
double kv(const Kernel& k, const RowMatrix& X, Index i, const Vector& z) { return k.value(X.row(i).transpose(), z); }

/// The slack term of the PA objective for slack xi (+inf for PA when xi > 0).
double slack(int pa_type, double C, double xi) {
  if (pa_type == 0) return xi > 1e-12 ? std::numeric_limits<double>::infinity() : 0.0;
  return pa_type == 1 ? C * xi : C * xi * xi;
}

/// Brute force of one candidate: min over beta of 1/2 ||Delta||^2 + slack, Delta = -a_r phi(x_r)
/// + sum_{i in S} beta_i phi(z_i), written as a search over the new value v = f(x_t) + Delta(x_t):
/// for each v the least-norm Delta is the KKT system of the equality-constrained problem
/// (solved densely), and the convex objective in v is minimised by ternary search between
/// f(x_t) and y - b. Returns the objective and (in delta) Delta's coefficients on S.
double oracle(const Kernel& k, const RowMatrix& Z, const Vector& xr, double ar, const Vector& xt, double f, double y,
              double eps, int pa_type, double C, Vector& delta) {
  const Index m = Z.rows();
  Eigen::MatrixXd K(m + 1, m + 1);
  Vector ks(m), kt(m);
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < m; ++j) K(i, j) = k.value(Z.row(i).transpose(), Z.row(j).transpose());
    ks(i) = k.value(Z.row(i).transpose(), xr);
    kt(i) = k.value(Z.row(i).transpose(), xt);
    K(i, m) = K(m, i) = kt(i);
  }
  K(m, m) = 0.0;
  const double krr = k.value(xr, xr), krt = k.value(xr, xt);
  const auto solve = [&](double v, Vector& beta) {
    if (m == 0) {  // Delta = -a_r phi(x_r): v is fixed
      beta.resize(0);
      return std::abs(v - (f - ar * krt)) < 1e-9 ? 0.5 * ar * ar * krr : std::numeric_limits<double>::infinity();
    }
    Vector rhs(m + 1);
    rhs << ar * ks, v - f + ar * krt;
    const Vector sol = K.fullPivLu().solve(rhs);
    beta = sol.head(m);
    return 0.5 * (ar * ar * krr - 2.0 * ar * beta.dot(ks) + beta.dot(K.topLeftCorner(m, m) * beta));
  };
  const auto obj = [&](double v, Vector& beta) {
    const double xi = (std::max)(0.0, std::abs(y - v) - eps);
    return solve(v, beta) + slack(pa_type, C, xi);
  };
  if (m == 0) return obj(f - ar * krt, delta);
  // Hard-margin PA is feasible only within epsilon of y: search there (its norm grows away from f).
  const double near = pa_type == 0 ? y + (f > y ? eps : -eps) : f;
  double lo = (std::min)(near, y), hi = (std::max)(near, y);
  for (int it = 0; it < 300; ++it) {
    const double a = lo + (hi - lo) / 3.0, b = hi - (hi - lo) / 3.0;
    Vector t1, t2;
    if (obj(a, t1) <= obj(b, t2))
      hi = b;
    else
      lo = a;
  }
  return obj(0.5 * (lo + hi), delta);
}

/// The nearest SV of point z among the rows of X but `skip` (-1: none skipped).
Index nearest(const RowMatrix& X, const Vector& z, Index skip) {
  Index best = -1;
  double d2 = std::numeric_limits<double>::infinity();
  for (Index j = 0; j < X.rows(); ++j)
    if (j != skip && (X.row(j).transpose() - z).squaredNorm() < d2) d2 = (X.row(j).transpose() - z).squaredNorm(), best = j;
  return best;
}

}  // namespace

TEST_CASE("unbudgeted PA, PA-I, PA-II: the closed forms of Crammer et al. 2006, section 5") {
  const Data s = sine(120, 2, 1);
  for (int type : {0, 1, 2}) {
    PARegressor r(2, params(type, 0));
    RowMatrix X(0, 2);
    Vector a(0);
    const Kernel k = r.params().kernel;
    for (Index t = 0; t < s.X.rows(); ++t) {
      const Vector x = s.X.row(t).transpose();
      double f = 0.0;
      for (Index j = 0; j < X.rows(); ++j) f += a(j) * kv(k, X, j, x);
      const double pred = r.learn_one(x.data(), s.y(t));
      CHECK_NEAR(pred, f, 1e-10);
      const double l = std::abs(s.y(t) - f) - 0.1;
      if (!(l > 0.0)) continue;
      const double q = k.value(x, x);
      const double tau = type == 0 ? l / q : type == 1 ? (std::min)(0.5, l / q) : l / (q + 1.0 / (2.0 * 0.5));
      X.conservativeResize(X.rows() + 1, 2);
      X.row(X.rows() - 1) = x.transpose();
      a.conservativeResize(a.size() + 1);
      a(a.size() - 1) = (s.y(t) > f ? 1.0 : -1.0) * tau;
    }
    CHECK(svs(r) == X);
    CHECK((coefs(r) - a).cwiseAbs().maxCoeff() < 1e-10);
  }
}

TEST_CASE("budget >= stream length is unbudgeted PA, bit for bit") {
  const Data s = sine(150, 3, 2);
  for (int type : {0, 1, 2})
    for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project})
      for (bool avg : {false, true}) {
        PARegressorParams pa = params(type, 0, v), pb = params(type, 150, v);
        pa.averaged = pb.averaged = avg;
        pa.fit_intercept = pb.fit_intercept = true;
        PARegressor a(3, pa), b(3, pb);
        Vector qa(150), qb(150);
        a.partial_fit(s.X, s.y.data(), qa.data());
        b.partial_fit(s.X, s.y.data(), qb.data());
        CHECK(qa == qb);
        CHECK(coefs(a) == coefs(b));
        CHECK(a.decision_function(s.X) == b.decision_function(s.X));
        CHECK(b.counters().maintenance == 0);
      }
}

TEST_CASE("every budgeted step (BPA-S, BPA-NN, BPA-P) against the brute-force constrained problem") {
  const Data s = sine(90, 2, 3);
  for (int type : {0, 1, 2})
    for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project}) {
      PARegressor r(2, params(type, 6, v));
      const Kernel k = r.params().kernel;
      int checked = 0;
      for (Index t = 0; t < s.X.rows(); ++t) {
        const PARegressor before = r;
        const Vector xt = s.X.row(t).transpose();
        r.learn_one(xt.data(), s.y(t));
        if (r.counters().maintenance == before.counters().maintenance || r.last_objectives().size() == 0) continue;
        const RowMatrix X = svs(before);
        const Vector A = coefs(before);
        const Index n = X.rows();
        const double f = before.decision(xt.data());
        Vector best_delta;
        RowMatrix best_Z;
        Index best = -1;
        double best_q = std::numeric_limits<double>::infinity();
        for (Index c = 0; c <= n; ++c) {  // candidate c: SV c removed, or (c = n) nothing removed
          std::vector<Index> S;
          if (v == BPAVariant::Project) {
            for (Index j = 0; j < n; ++j)
              if (j != c) S.push_back(j);
          } else if (v == BPAVariant::NearestNeighbor) {
            const Index m = c < n ? nearest(X, X.row(c).transpose(), c) : nearest(X, xt, -1);
            if (m >= 0) S.push_back(m);
          }
          RowMatrix Z(static_cast<Index>(S.size()) + (c < n ? 1 : 0), 2);
          for (std::size_t i = 0; i < S.size(); ++i) Z.row(static_cast<Index>(i)) = X.row(S[i]);
          if (c < n) Z.row(Z.rows() - 1) = xt.transpose();
          const Vector xr = c < n ? Vector(X.row(c).transpose()) : xt;
          Vector delta;
          const double q = oracle(k, Z, xr, c < n ? A(c) : 0.0, xt, f, s.y(t), 0.1, type, 0.5, delta);
          const double got = r.last_objectives()(c);
          if (std::isinf(q) || std::isinf(got))
            CHECK(std::isinf(q) == std::isinf(got));
          else
            CHECK_NEAR(got, q, 1e-6 * (1.0 + q));
          if (q < best_q) best_q = q, best = c, best_delta = delta, best_Z = Z;
        }
        if (best != r.last_removed() || std::isinf(best_q)) continue;  // a near-tie broken differently
        // The chosen candidate's function, probed: f_t - a_r k(x_r, .) + sum_S delta_i k(z_i, .).
        for (const Vector& z : bk_test::probes()) {
          double want = before.decision(z.data());
          if (best < n) want -= A(best) * kv(k, X, best, z);
          for (Index i = 0; i < best_Z.rows(); ++i) want += best_delta(i) * kv(k, best_Z, i, z);
          CHECK_NEAR(r.decision(z.data()), want, 1e-6);
        }
        ++checked;
      }
      CHECK(checked > 10);
      CHECK(r.support_vectors().size() <= 6);
    }
}

TEST_CASE("SPA sampling with probability 1 is the unsampled learner; sampling keeps fewer SVs") {
  const Data s = sine(200, 2, 4);
  for (int type : {0, 1, 2}) {
    PARegressorParams p = params(type, 0), q = p;
    q.sampling = true;
    q.alpha = q.beta = 1e-300;  // rho = min(alpha, loss) / beta = 1 for every loss >= 1e-300
    PARegressor a(2, p), b(2, q);
    Vector pa(200), pb(200);
    a.partial_fit(s.X, s.y.data(), pa.data());
    b.partial_fit(s.X, s.y.data(), pb.data());
    CHECK(pa == pb);
    CHECK(coefs(a) == coefs(b));
    PARegressorParams h = p;
    h.sampling = true;
    PARegressor c(2, h);
    c.partial_fit(s.X, s.y.data());
    CHECK(c.support_vectors().size() < a.support_vectors().size());
    CHECK(c.expected_support() > 0.0);
  }
}

TEST_CASE("averaging: the mean of every regressor held, intercepts included") {
  const Data s = sine(80, 2, 5);
  for (Index budget : {Index{0}, Index{5}}) {
    PARegressorParams p = params(1, budget), q = p;
    p.fit_intercept = q.fit_intercept = true;
    q.averaged = true;
    PARegressor plain(2, p), avg(2, q);
    const std::vector<Vector> Z = bk_test::probes();
    std::vector<double> sum(Z.size(), 0.0);  // f_1 = 0 with b_1 = 0
    for (Index t = 0; t < s.X.rows(); ++t) {
      avg.learn_one(s.X.row(t).data(), s.y(t));
      plain.learn_one(s.X.row(t).data(), s.y(t));
      for (std::size_t i = 0; i < Z.size(); ++i) {
        sum[i] += plain.decision(Z[i].data());
        CHECK_NEAR(avg.decision(Z[i].data()), sum[i] / static_cast<double>(t + 2), 1e-10);
      }
    }
    CHECK(coefs(plain) == coefs(avg));  // averaging changes the prediction only
  }
}

TEST_CASE("save, load and resume bit for bit; budgetkernel::Model predicts the same values") {
  const Data s = sine(300, 40, 6);  // 40 features: the blocked scoring path too
  for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project})
    for (bool avg : {false, true}) {
      PARegressorParams p = params(2, 20, v);
      p.averaged = avg;
      p.fit_intercept = true;
      p.sampling = avg;
      p.alpha = 0.5;
      p.beta = 1.0;
      PARegressor full(40, p), half(40, p);
      full.partial_fit(s.X, s.y.data());
      half.partial_fit(s.X.topRows(150), s.y.head(150).data());
      const std::string bytes = bk_test::bytes_of(half);
      PARegressor loaded;
      loaded.load(FieldMap::from_bytes(bytes));
      CHECK(bk_test::bytes_of(loaded) == bytes);
      const Model model(FieldMap::from_bytes(bytes));
      const Vector mine = half.decision_function(s.X), theirs = model.decision_function(s.X).col(0);
      if (avg)  // Model sums the averaged coefficients first: the same values up to rounding
        CHECK((mine - theirs).cwiseAbs().maxCoeff() < 1e-12 * (1.0 + mine.cwiseAbs().maxCoeff()));
      else
        CHECK(mine == theirs);
      loaded.partial_fit(s.X.bottomRows(150), s.y.tail(150).data());
      CHECK(bk_test::bytes_of(loaded) == bk_test::bytes_of(full));
    }
}

TEST_CASE("bad parameters, targets and files are refused") {
  const auto bad = [](auto change) {
    PARegressorParams p = params(1, 0);
    change(p);
    return bk_test::throws_type([&] { PARegressor r(2, p); }, 0);
  };
  CHECK(bad([](PARegressorParams& p) { p.C = 0.0; }));
  CHECK(bad([](PARegressorParams& p) { p.pa_type = 3; }));
  CHECK(bad([](PARegressorParams& p) { p.epsilon = -1.0; }));
  CHECK(bad([](PARegressorParams& p) { p.variant = BPAVariant::Random; }));
  CHECK(bad([](PARegressorParams& p) { p.beta = 0.5; }));
  PARegressor r(2, params(1, 0));
  RowMatrix X = RowMatrix::Zero(2, 2);
  Vector y(2);
  y << 1.0, std::nan("");
  CHECK(bk_test::throws_type([&] { r.partial_fit(X, y.data()); }, 0));
  CHECK(r.counters().examples == 0);
  FieldMap fm;
  r.save(fm);
  fm.set("intercept", std::nan(""));
  CHECK(bk_test::throws_type([&] { PARegressor l; l.load(fm); }, 1));
}

int main() { return bk_test::run_all(); }
