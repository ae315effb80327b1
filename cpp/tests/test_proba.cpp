// Probabilities: the logistic loss of kernel logistic regression (its coefficient row against
// finite differences of the loss), the probability map (rows sum to 1, logs without underflow),
// Platt's fit and the temperature fit (their optimality conditions), and the online
// calibration of a learner (resumed bit for bit through a model file).
#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

// The loss as a function of f alone (the step scales beta only).
double loss_at(const Vector& f, std::int32_t y) {
  Vector beta(f.size());
  return detail::logistic_loss(f, y, 1.0, beta);
}

// beta = -step * dloss/df, checked by central differences.
void check_gradient(const Vector& f, std::int32_t y) {
  Vector beta(f.size());
  const double step = 0.37;
  detail::logistic_loss(f, y, step, beta);
  for (Index k = 0; k < f.size(); ++k) {
    const double h = 1e-6;
    Vector fp = f, fm = f;
    fp(k) += h;
    fm(k) -= h;
    const double grad = (loss_at(fp, y) - loss_at(fm, y)) / (2.0 * h);
    CHECK_NEAR(beta(k), -step * grad, 1e-8);
  }
}

TEST_CASE("logistic loss: binary coefficient row is minus the step times the gradient") {
  for (double f : {-30.0, -3.0, -0.2, 0.0, 0.4, 5.0, 40.0})
    for (std::int32_t y : {0, 1}) check_gradient(Vector::Constant(1, f), y);
  Vector beta(1);  // the loss itself: log(1 + exp(-y f))
  CHECK_NEAR(detail::logistic_loss(Vector::Constant(1, 2.0), 1, 1.0, beta), std::log1p(std::exp(-2.0)), 1e-15);
  CHECK_NEAR(detail::logistic_loss(Vector::Constant(1, 2.0), 0, 1.0, beta), std::log1p(std::exp(2.0)), 1e-14);
  CHECK(std::isfinite(detail::logistic_loss(Vector::Constant(1, -1000.0), 1, 1.0, beta)));
}

TEST_CASE("logistic loss: softmax cross-entropy coefficient row is minus the step times the gradient") {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0.0, 3.0);
  for (int rep = 0; rep < 20; ++rep) {
    Vector f(4);
    for (Index k = 0; k < 4; ++k) f(k) = g(rng);
    check_gradient(f, rep % 4);
  }
  Vector f(3), beta(3);
  f << 800.0, -800.0, 0.0;  // no overflow: log-sum-exp
  CHECK_NEAR(detail::logistic_loss(f, 1, 1.0, beta), 1600.0, 1e-9);
  CHECK_NEAR(beta.sum(), 0.0, 1e-12);
}

TEST_CASE("probability map: rows sum to 1 and logs stay finite") {
  RowMatrix D(4, 1), P(4, 2), L(4, 2);
  D << -1000.0, -2.0, 0.0, 1000.0;
  ProbabilityMap m;  // native: slopes -1, P(1) = sigmoid(f)
  m.apply(D, P, false);
  m.apply(D, L, true);
  for (Index i = 0; i < 4; ++i) {
    CHECK_NEAR(P(i, 0) + P(i, 1), 1.0, 1e-15);
    CHECK(std::isfinite(L(i, 0)) && std::isfinite(L(i, 1)));
  }
  CHECK_NEAR(P(1, 1), 1.0 / (1.0 + std::exp(2.0)), 1e-16);
  CHECK_NEAR(L(0, 1), -1000.0, 1e-12);
  RowMatrix D3(2, 3), P3(2, 3);
  D3 << 1.0, 2.0, 3.0, -700.0, 0.0, 700.0;
  m.a = 0.5;
  m.apply(D3, P3, false);
  CHECK_NEAR(P3.row(0).sum(), 1.0, 1e-15);
  CHECK_NEAR(P3(0, 2) / P3(0, 1), std::exp(0.5), 1e-13);
  CHECK(P3.allFinite());
}

// The optimality conditions of the two-slope Platt fit: on each side of f = 0, the derivative
// of the smoothed cross-entropy is 0 (or the slope is clamped at 0 with a derivative >= 0).
TEST_CASE("Platt's fit: zero derivative on each side, slopes <= 0, P = 1/2 when f says nothing") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 1.0);
  const Index n = 500;
  std::vector<double> f(n);
  std::vector<std::int32_t> y(n);
  for (Index i = 0; i < n; ++i) {
    y[i] = g(rng) > 0.0 ? 1 : 0;
    f[i] = 2.0 * (y[i] ? 1.0 : -1.0) + 1.5 * g(rng) + 0.7;  // biased: the sides differ
  }
  double slope[2] = {0.0, 0.0};
  fit_platt(f.data(), y.data(), n, slope);
  double np = 0.0;
  for (auto v : y) np += v;
  const double hi = (np + 1) / (np + 2), lo = 1 / (n - np + 2);
  double gpos = 0.0, gneg = 0.0;
  for (Index i = 0; i < n; ++i) {
    const double a = f[i] >= 0.0 ? slope[0] : slope[1];
    const double r = (y[i] ? hi : lo) - 1.0 / (1.0 + std::exp(a * f[i]));
    (f[i] >= 0.0 ? gpos : gneg) += f[i] * r;
  }
  CHECK(slope[0] < 0.0 && slope[1] < 0.0 && slope[0] != slope[1]);
  CHECK_NEAR(gpos, 0.0, 1e-6);  // Newton stops at a decrement of 1e-13 (1 + F)
  CHECK_NEAR(gneg, 0.0, 1e-6);
  // Anti-correlated values: both slopes would be > 0; they are clamped to 0 (P = 1/2).
  for (Index i = 0; i < n; ++i) f[i] = -f[i];
  double flat[2] = {-1.0, -1.0};
  fit_platt(f.data(), y.data(), n, flat);
  CHECK(flat[0] == 0.0 && flat[1] == 0.0);
  // One pair, and separable pairs: finite thanks to the smoothed targets.
  double s3[2] = {0.0, 0.0};
  const double f1[] = {-1.0, 1.0};
  const std::int32_t y1[] = {0, 1};
  fit_platt(f1, y1, 2, s3);
  CHECK(std::isfinite(s3[0]) && std::isfinite(s3[1]) && s3[0] < 0.0 && s3[1] < 0.0);
  fit_platt(f1 + 1, y1 + 1, 1, s3);
  CHECK(std::isfinite(s3[0]) && std::isfinite(s3[1]));
}

TEST_CASE("temperature fit: zero derivative, a >= 0") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  const Index n = 400, c = 3;
  RowMatrix F(n, c);
  std::vector<std::int32_t> y(n);
  std::vector<double> count(c, 0.0);
  for (Index i = 0; i < n; ++i) {
    y[i] = static_cast<std::int32_t>(i % c);
    for (Index k = 0; k < c; ++k) F(i, k) = 4.0 * (k == y[i]) + 2.0 * g(rng);
    count[y[i]] += 1;
  }
  double a = 1.0;
  fit_temperature(F.data(), y.data(), n, c, a);
  double grad = 0.0;
  for (Index i = 0; i < n; ++i) {
    const double Ny = count[y[i]];
    Vector p = (a * F.row(i).transpose()).array().exp();
    p /= p.sum();
    for (Index k = 0; k < c; ++k) {
      const double q = k == y[i] ? (Ny + 1) / (Ny + 2) : 1 / ((Ny + 2) * (c - 1));
      grad += (p(k) - q) * F(i, k);
    }
  }
  CHECK(a > 0.0);
  CHECK_NEAR(grad, 0.0, 1e-7);
  F = -F;  // anti-correlated: a = 0 (uniform probabilities)
  fit_temperature(F.data(), y.data(), n, c, a);
  CHECK(a == 0.0);
}

TEST_CASE("a learner's calibration: prequential pairs, and resumed bit for bit from its file") {
  const bk_test::Stream s = bk_test::noisy_board(3000, 2, 11, 0.1);
  BSGDParams p;
  p.budget = 30;
  p.kernel = Kernel(KernelType::RBF, 2.0);
  KernelPegasos full(2, 2, p), half(2, 2, p), probe(2, 2, p);
  for (KernelPegasos* l : {&full, &half, &probe}) l->set_probability(true);
  full.partial_fit(s.X, s.y.data());
  half.partial_fit(s.X.topRows(1300), s.y.data());
  FieldMap fm;
  half.save(fm);
  KernelPegasos resumed;
  resumed.load(FieldMap::from_bytes(fm.to_bytes()));
  resumed.partial_fit(s.X.bottomRows(1700), s.y.data() + 1300);
  RowMatrix P1(100, 2), P2(100, 2);
  full.predict_proba(s.X.topRows(100), P1);
  resumed.predict_proba(s.X.topRows(100), P2);
  CHECK(P1 == P2);
  CHECK(full.calibration().seen() == 3000 && full.calibration().size() == PlattCalibration::kWindow);
  // The pair recorded for an example is its decision value before it was learned.
  RowMatrix D(1, 1);
  probe.partial_fit(s.X.topRows(10), s.y.data());
  probe.decision_function(s.X.row(10), D);
  probe.partial_fit(s.X.middleRows(10, 1), s.y.data() + 10);
  CHECK(probe.calibration().window_f()[10] == D(0, 0));
  // Logistic loss: native probabilities, nothing recorded.
  p.loss = PegasosLoss::Log;
  KernelPegasos klr(2, 2, p);
  CHECK(klr.has_probabilities());
  klr.partial_fit(s.X.topRows(200), s.y.data());
  CHECK(klr.calibration().seen() == 0);
  KernelPegasos fresh(2, 2, BSGDParams{});
  fresh.set_probability(true);
  RowMatrix P(1, 2);
  CHECK(!fresh.has_probabilities());
  CHECK_THROWS(fresh.predict_proba(s.X.topRows(1), P));
}

TEST_CASE("calibration is off by default: nothing recorded, no fields, the file of a learner without it") {
  const bk_test::Stream s = bk_test::noisy_board(1500, 2, 12, 0.1);
  BSGDParams p;
  p.budget = 30;
  p.kernel = Kernel(KernelType::RBF, 2.0);
  KernelPegasos off(2, 2, p), on(2, 2, p);
  CHECK(!off.probability());
  on.set_probability(true);
  off.partial_fit(s.X, s.y.data());
  on.partial_fit(s.X, s.y.data());
  CHECK(off.calibration().seen() == 0 && !off.has_probabilities());
  RowMatrix P(1, 2);
  CHECK_THROWS(off.predict_proba(s.X.topRows(1), P));
  FieldMap a, b;
  off.save(a);
  on.save(b);
  CHECK(!a.has("probability") && !a.has("platt.seen") && !a.has("loss"));
  CHECK(b.get_i64("probability") == 1 && b.get_i64("platt.seen") == 1500);
  KernelPegasos back;
  back.load(FieldMap::from_bytes(b.to_bytes()));
  CHECK(back.probability() && back.has_probabilities());
  // The calibration only watches: turned off (which discards it), the learner that had it
  // writes the same bytes as the one that never had it.
  back.set_probability(false);
  CHECK(back.calibration().seen() == 0 && !back.has_probabilities());
  FieldMap c;
  back.save(c);
  CHECK(c.to_bytes() == a.to_bytes());
}

TEST_CASE("predict with probabilities: the first most probable class, which is the decision values' where P does not tie") {
  for (int c : {2, 3}) {
    // Labels that the inputs do not predict: the calibration fits slopes (or a) of 0 on some
    // side, so probabilities tie exactly where decision values differ.
    std::mt19937_64 rng(40 + c);
    std::normal_distribution<double> g;
    RowMatrix X(600, 2);
    std::vector<std::int32_t> y(600);
    for (Index i = 0; i < 600; ++i) {
      X(i, 0) = g(rng);
      X(i, 1) = g(rng);
      y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(c));
    }
    BSGDParams p;
    p.budget = 30;
    p.kernel = Kernel(KernelType::RBF, 1.0);
    KernelPegasos l(2, c, p);
    l.set_probability(true);
    l.partial_fit(X.topRows(300), y.data());
    const Index n = 300;
    RowMatrix P(n, c), D(n, l.n_outputs());
    std::vector<std::int32_t> pred(static_cast<std::size_t>(n));
    l.predict_proba(X.bottomRows(n), P);
    l.decision_function(X.bottomRows(n), D);
    l.predict(X.bottomRows(n), pred.data());
    int ties = 0;
    for (Index i = 0; i < n; ++i) {
      Index first = 0;
      for (Index k = 1; k < c; ++k)
        if (P(i, k) > P(i, first)) first = k;
      CHECK(pred[static_cast<std::size_t>(i)] == first);
      bool tie = false;
      for (Index k = 0; k < c; ++k) tie = tie || (k != first && P(i, k) == P(i, first));
      ties += tie;
      if (!tie) CHECK(pred[static_cast<std::size_t>(i)] == detail::predict_from_scores(D.row(i)));
    }
    if (c == 2) CHECK(ties > 0);  // the case this is about occurred (slopes of 0 on both sides)
  }
}

}  // namespace

TEST_MAIN()
