// Tests of learners/pegasos_regressor.hpp (budgeted SGD regression) and regressor_base.hpp:
// the unbudgeted reduction, every maintenance step in one column against brute force
// (||w||^2 and the degradation ||Delta w||^2 of eq. 14), model files and resuming, bad input.
#include "test_oracles.hpp"
#include "test_util.hpp"

#include <budgetkernel/budgetkernel.hpp>

#include <cmath>
#include <random>
#include <string>

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
    s.y(i) = 3.0 + std::sin(2.0 * s.X(i, 0)) + noise(rng);
  }
  return s;
}

BSGDRegressorParams params(RegressionLoss loss, Maintenance m, Index budget, KernelType k = KernelType::RBF) {
  BSGDRegressorParams p;
  p.kernel = Kernel(k, 0.7);
  p.lam = 1e-2;
  p.budget = budget;
  p.maintenance = m;
  p.loss = loss;
  p.epsilon = 0.1;
  p.seed = 3;
  return p;
}

/// ||sum_i a_i phi(x_i) - sum_j b_j phi(z_j)||^2 of two one-column expansions, by brute force.
double dist2(const RowMatrix& X, const Vector& a, const RowMatrix& Z, const Vector& b, const Kernel& k) {
  const auto dot = [&](const RowMatrix& P, const Vector& p, const RowMatrix& Q, const Vector& q) {
    double s = 0.0;
    for (Index i = 0; i < P.rows(); ++i)
      for (Index j = 0; j < Q.rows(); ++j) s += p(i) * q(j) * k.value(P.row(i).transpose(), Q.row(j).transpose());
    return s;
  };
  return dot(X, a, X, a) - 2.0 * dot(X, a, Z, b) + dot(Z, b, Z, b);
}

RowMatrix svs(const BSGDRegressor& r) { return r.support_vectors().X().topRows(r.support_vectors().size()); }
Vector coefs(const BSGDRegressor& r) { return r.coefficients().col(0); }

const RegressionLoss kLosses[] = {RegressionLoss::EpsilonInsensitive, RegressionLoss::Squared, RegressionLoss::Huber};
const Maintenance kAll[] = {Maintenance::Merge,        Maintenance::Project,      Maintenance::ProjectExact,
                            Maintenance::RemoveRandom, Maintenance::RemoveOldest, Maintenance::RemoveSmallest};

}  // namespace

TEST_CASE("budget >= stream length is the unbudgeted learner, bit for bit") {
  const Data s = sine(150, 3, 1);
  for (RegressionLoss loss : kLosses)
    for (Maintenance m : kAll) {
      BSGDRegressor a(3, params(loss, m, 0)), b(3, params(loss, m, 150));
      Vector pa(150), pb(150);
      a.partial_fit(s.X, s.y.data(), pa.data());
      b.partial_fit(s.X, s.y.data(), pb.data());
      CHECK(pa == pb);
      CHECK(coefs(a) == coefs(b));
      CHECK(svs(a) == svs(b));
      CHECK(a.decision_function(s.X) == b.decision_function(s.X));
      CHECK(b.counters().maintenance == 0);
    }
}

TEST_CASE("every maintenance step in one column: ||w||^2 and ||Delta w||^2 against brute force") {
  const Data s = sine(120, 2, 2);
  for (RegressionLoss loss : kLosses)
    for (Maintenance m : kAll) {
      BSGDRegressor r(2, params(loss, m, 8));
      int checked = 0;
      for (Index t = 0; t < s.X.rows(); ++t) {
        const BSGDRegressor before = r;
        const double pred = r.learn_one(s.X.row(t).data(), s.y(t));
        CHECK(pred == before.decision(s.X.row(t).data()));
        // ||w||^2 is tracked through every step exactly (up to rounding)
        const double n2 = dist2(svs(r), coefs(r), RowMatrix(0, 2), Vector(0), r.params().kernel);
        CHECK_NEAR(r.norm2(), n2, 1e-9 * (1.0 + n2));
        CHECK(r.norm2() <= 2.0 * r.max_loss0() / r.params().lam * (1.0 + 1e-12));
        if (r.counters().maintenance == before.counters().maintenance) continue;
        // The step added beta phi(x_t) to the shrunk w, then reduced: without the ball
        // projection (radius not reached), w_after = w_mid - Delta.
        if (std::abs(r.norm2() - 2.0 * r.max_loss0() / r.params().lam) < 1e-9 * r.norm2()) continue;
        const double tt = static_cast<double>(before.counters().examples + 1);
        double slope = 0.0;
        detail::regression_loss(loss, 0.1, s.y(t) - pred, &slope);
        RowMatrix Xm(svs(before).rows() + 1, 2);
        Xm << svs(before), s.X.row(t);
        Vector am(Xm.rows());
        am << (1.0 - 1.0 / tt) * coefs(before), slope / (r.params().lam * tt);
        const double deg = r.counters().degradation - before.counters().degradation;
        const double bf = dist2(Xm, am, svs(r), coefs(r), r.params().kernel);
        CHECK_NEAR(deg, bf, 1e-8 * (1.0 + bf));
        ++checked;
      }
      CHECK(checked > 20);
      CHECK(r.support_vectors().size() <= 8);
    }
}

TEST_CASE("save, load and resume bit for bit; budgetkernel::Model predicts the same values") {
  const Data s = sine(300, 40, 3);  // 40 features: the blocked scoring path too
  for (Maintenance m : {Maintenance::Merge, Maintenance::Project, Maintenance::RemoveRandom}) {
    BSGDRegressor full(40, params(RegressionLoss::Huber, m, 20)), half(40, params(RegressionLoss::Huber, m, 20));
    full.partial_fit(s.X, s.y.data());
    half.partial_fit(s.X.topRows(150), s.y.head(150).data());
    FieldMap fm;
    half.save(fm);
    const std::string bytes = fm.to_bytes();
    BSGDRegressor loaded;
    loaded.load(FieldMap::from_bytes(bytes));
    CHECK(bk_test::bytes_of(loaded) == bytes);
    const Model model(FieldMap::from_bytes(bytes));
    CHECK(model.decision_function(s.X).col(0) == half.decision_function(s.X));
    loaded.partial_fit(s.X.bottomRows(150), s.y.tail(150).data());
    CHECK(bk_test::bytes_of(loaded) == bk_test::bytes_of(full));
    CHECK(loaded.counters().sse == full.counters().sse);
  }
}

TEST_CASE("bad input and corrupt files are refused") {
  BSGDRegressor r(2, params(RegressionLoss::Squared, Maintenance::Merge, 5));
  RowMatrix X = RowMatrix::Zero(3, 2);
  Vector y = Vector::Zero(3);
  y(1) = std::nan("");
  CHECK(bk_test::throws_type([&] { r.partial_fit(X, y.data()); }, 0));
  CHECK(r.counters().examples == 0);  // nothing learned from a rejected chunk
  y(1) = 1e200;
  CHECK(bk_test::throws_type([&] { r.partial_fit(X, y.data()); }, 0));
  y(1) = 0.0;
  X(2, 1) = std::numeric_limits<double>::infinity();
  CHECK(bk_test::throws_type([&] { r.partial_fit(X, y.data()); }, 0));
  CHECK(bk_test::throws_type([&] { r.partial_fit(RowMatrix::Zero(3, 4), y.data()); }, 0));
  CHECK(bk_test::throws_type([&] { r.partial_fit(RowMatrix::Zero(2, 2), Vector(Vector::Zero(3))); }, 0));
  BSGDRegressorParams p = params(RegressionLoss::Huber, Maintenance::Merge, 5);
  p.epsilon = 0.0;
  CHECK(bk_test::throws_type([&] { BSGDRegressor(2, p); }, 0));
  p = params(RegressionLoss::Squared, Maintenance::Merge, 5, KernelType::Linear);
  CHECK(bk_test::throws_type([&] { BSGDRegressor(2, p); }, 0));
  // a classifier's file is not a regressor's, and the other way round
  KernelPegasos clf(2, 2, BSGDParams{});
  CHECK(bk_test::throws_type([&] { BSGDRegressor().load(FieldMap::from_bytes(bk_test::bytes_of(clf))); }, 1));
  CHECK(bk_test::throws_type([&] { KernelPegasos().load(FieldMap::from_bytes(bk_test::bytes_of(r))); }, 1));
  // a corrupt counter
  FieldMap fm;
  r.save(fm);
  fm.set("count.sse", -1.0);
  CHECK(bk_test::throws_type([&] { BSGDRegressor().load(fm); }, 1));
}

TEST_CASE("a StopPoll stops partial_fit between rows, the rows before it learned") {
  const Data s = sine(50, 2, 4);
  BSGDRegressor r(2, params(RegressionLoss::EpsilonInsensitive, Maintenance::Merge, 10));
  int calls = 0;
  StopPoll stop([](void* c) { return ++*static_cast<int*>(c) > 20; }, &calls, std::chrono::nanoseconds(0));
  Index done = -1;
  try {
    r.partial_fit(s.X, s.y.data(), nullptr, &stop);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(done == 20);
  CHECK(r.counters().examples == 20);
  BSGDRegressor prefix(2, params(RegressionLoss::EpsilonInsensitive, Maintenance::Merge, 10));
  prefix.partial_fit(s.X.topRows(20), s.y.head(20).data());
  CHECK(bk_test::bytes_of(prefix) == bk_test::bytes_of(r));
}

int main() { return bk_test::run_all(); }

TEST_CASE("the step offset t0: saved only when non-zero, resumed bit for bit, a negative one refused") {
  const Data s = sine(300, 3, 5);
  BSGDRegressorParams p = params(RegressionLoss::Squared, Maintenance::Merge, 20);
  FieldMap plain;
  BSGDRegressor(3, p).save(plain);
  CHECK(!plain.has("t0"));  // t0 = 0: no field (format v1 writes t0 only when nonzero)
  p.t0 = 1.0 / p.lam;
  BSGDRegressor full(3, p), half(3, p);
  full.partial_fit(s.X, s.y.data());
  half.partial_fit(s.X.topRows(150), s.y.head(150).data());
  FieldMap fm;
  half.save(fm);
  CHECK(fm.has("t0"));
  BSGDRegressor loaded;
  loaded.load(fm);
  CHECK(loaded.params().t0 == p.t0);
  loaded.partial_fit(s.X.bottomRows(150), s.y.tail(150).data());
  CHECK(bk_test::bytes_of(loaded) == bk_test::bytes_of(full));
  fm.set("t0", -1.0);
  CHECK(bk_test::throws_type([&] { BSGDRegressor().load(fm); }, 1));
  p.t0 = -1.0;
  CHECK(bk_test::throws_type([&] { BSGDRegressor(3, p); }, 0));
}
