// UniformAverage on the Passive-Aggressive family (PAParams::averaged): for every variant
// (BPA-S, BPA-NN, BPA-P, PA+Rand) with a small budget and unbudgeted, hinge and ramp loss,
// binary and 3-class:
//  - the averaged decision equals the explicit mean of the stored classifiers f_1..f_{t+1},
//    and the prequential prediction of example t uses the mean of f_1..f_t;
//  - averaging does not change training (SVs / coefficients identical with averaging off);
//  - save / load resume bit for bit; budgetkernel::Model predicts the average.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

using bk_test::Stream;
using bk_test::bytes_of;
using bk_test::dec;
using bk_test::direction;
using bk_test::eval;
using bk_test::probes;

Stream make_stream(Index n, int n_classes, std::uint64_t seed) { return bk_test::noisy_board(n, n_classes, seed, 0.1); }

Vector row_vec(const Stream& s, Index i) { return s.X.row(i).transpose(); }
std::int32_t label(const Stream& s, Index i) { return s.y[static_cast<std::size_t>(i)]; }

// predicted class of scores and the gap to the runner-up (binary: |f|)
std::int32_t top(const Vector& f, double& gap) {
  if (f.size() == 1) {
    gap = std::abs(f(0));
    return f(0) > 0.0 ? 1 : 0;
  }
  Index b = 0;
  f.maxCoeff(&b);
  double second = -1e300;
  for (Index i = 0; i < f.size(); ++i)
    if (i != b) second = std::max(second, f(i));
  gap = f(b) - second;
  return static_cast<std::int32_t>(b);
}

PAParams pa(Index budget, BPAVariant v, PALoss loss, bool averaged) {
  PAParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.C = 0.8;
  p.pa_type = 1;
  p.loss = loss;
  p.budget = budget;
  p.variant = v;
  p.seed = 5;
  p.averaged = averaged;
  return p;
}

bool same_model(const PassiveAggressive& a, const PassiveAggressive& b) {
  const SupportVectors &sa = a.support_vectors(), &sb = b.support_vectors();
  if (sa.size() != sb.size()) return false;
  const Index n = sa.size();
  if (!(sa.X().topRows(n) == sb.X().topRows(n)) || !(a.coefficients() == b.coefficients())) return false;
  for (Index i = 0; i < n; ++i)
    if (sa.id(i) != sb.id(i)) return false;
  return true;
}

// counters that do not depend on the prediction (mistakes do: the average predicts)
bool same_training_counters(const Counters& a, const Counters& b) {
  return a.examples == b.examples && a.updates == b.updates && a.maintenance == b.maintenance &&
         a.degradation == b.degradation && a.labels == b.labels;
}

struct Config {
  BPAVariant v;
  Index budget;
  PALoss loss;
  int c;
};

std::vector<Config> configs() {
  std::vector<Config> out;
  for (int c : {2, 3})
    for (PALoss loss : {PALoss::Hinge, PALoss::Ramp}) {
      out.push_back({BPAVariant::Simple, 0, loss, c});  // unbudgeted (the variant is irrelevant)
      for (BPAVariant v : {BPAVariant::Simple, BPAVariant::NearestNeighbor, BPAVariant::Project, BPAVariant::Random})
        out.push_back({v, 6, loss, c});
    }
  return out;
}

}  // namespace

namespace {

// Runs an averaged learner and a plain one over the stream and checks, after every example:
// identical training, averaged decision = explicit mean of the classifiers held at the probes,
// prequential prediction = the mean of f_1..f_t at x_t. Then the Model of both files.
void check_oracle(const Config& cf, const Stream& s, const std::vector<Vector>& zs) {
  const Index T = s.X.rows();
  const PAParams p = pa(cf.budget, cf.v, cf.loss, true);
  PassiveAggressive l(2, cf.c, p), plain(2, cf.c, pa(cf.budget, cf.v, cf.loss, false));
  const Index o = l.n_outputs();
  std::vector<Vector> sum_z(zs.size(), Vector::Zero(o));
  RowMatrix sum_x = RowMatrix::Zero(T, o);
  double worst = 0.0, worst_pred = 0.0;
  int pred_mismatch = 0, plain_mismatch = 0, checked = 0;
  bool same_training = true;
  for (Index i = 0; i < T; ++i) {
    const Vector x = row_vec(s, i);
    const Vector mean_x = sum_x.row(i).transpose() / static_cast<double>(i + 1);
    worst_pred = std::max(worst_pred, (dec(l, x) - mean_x).cwiseAbs().maxCoeff());
    const Vector cur_x = dec(plain, x);
    const std::int32_t pr = l.learn_one(x.data(), label(s, i));
    const std::int32_t pp = plain.learn_one(x.data(), label(s, i));
    double gap;
    const std::int32_t want = top(mean_x, gap);
    if (gap > 1e-9) {
      ++checked;
      if (pr != want) ++pred_mismatch;
    }
    double gap2;
    const std::int32_t want2 = top(cur_x, gap2);
    if (gap2 > 1e-9 && pp != want2) ++plain_mismatch;
    same_training = same_training && same_model(l, plain) && same_training_counters(l.counters(), plain.counters());
    const Index n = l.support_vectors().size();
    const RowMatrix X = l.support_vectors().X().topRows(n), A = l.coefficients();
    for (std::size_t q = 0; q < zs.size(); ++q) sum_z[q] += eval(p.kernel, X, A, zs[q]);
    for (Index j = i + 1; j < T; ++j) sum_x.row(j) += eval(p.kernel, X, A, row_vec(s, j)).transpose();
    const double N = static_cast<double>(i + 2);
    for (std::size_t q = 0; q < zs.size(); ++q)
      worst = std::max(worst, (dec(l, zs[q]) - sum_z[q] / N).cwiseAbs().maxCoeff());
  }
  const bool ok = same_training && worst <= 1e-10 && worst_pred <= 1e-10 && pred_mismatch == 0 &&
                  plain_mismatch == 0 && checked > T / 2;
  if (!ok)
    std::printf("  variant %s budget %ld loss %d c %d: same %d worst %g pred %g mism %d/%d plain %d\n",
                bpa_variant_name(cf.v), static_cast<long>(cf.budget), static_cast<int>(cf.loss), cf.c,
                int(same_training), worst, worst_pred, pred_mismatch, checked, plain_mismatch);
  CHECK(ok);
  const Index n = l.support_vectors().size(), r = l.average().retired().size();
  CHECK(l.average().size(l.support_vectors()) == n + r);
  CHECK(plain.average().size(plain.support_vectors()) == n);
  if (cf.budget == 0) CHECK(r == 0);
  if (cf.budget > 0) {
    CHECK(n <= cf.budget);
    CHECK(l.counters().maintenance > 0);
    CHECK(r > 0);  // removed SVs keep contributing to the mean
  }
  // Model reads the averaged predictor; the non-averaged file predicts the current model.
  RowMatrix P(static_cast<Index>(zs.size()), 2);
  for (std::size_t q = 0; q < zs.size(); ++q) P.row(static_cast<Index>(q)) = zs[q].transpose();
  for (const PassiveAggressive* lp : {&l, &plain}) {
    FieldMap fm;
    lp->save(fm);
    const Model m(FieldMap::from_bytes(fm.to_bytes()));
    RowMatrix D(P.rows(), o);
    lp->decision_function(P, D);
    CHECK((m.decision_function(P) - D).cwiseAbs().maxCoeff() <= 1e-12);
    CHECK(m.n_support() == lp->average().size(lp->support_vectors()));
  }
}

// 8 distinct points, repeated: duplicates fill the store, so BPA-P folds dependent SVs when
// its projection activates and folds x_t when it is in the span; BPA-NN projects onto NN(t).
Stream repeated_points(Index T, int c, std::uint64_t seed, RowMatrix& P) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  P.resize(8, 2);
  for (Index i = 0; i < 8; ++i) P.row(i) << g(rng), g(rng);
  Stream s{RowMatrix(T, 2), std::vector<std::int32_t>(static_cast<std::size_t>(T))};
  for (Index i = 0; i < T; ++i) {
    const Index j = static_cast<Index>(rng() % 8);
    s.X.row(i) = P.row(j);
    s.y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((j + (rng() % 5 == 0 ? 1 : 0)) % c);
  }
  return s;
}

}  // namespace

TEST_CASE("averaged PA / BPA: decision = explicit mean of stored classifiers; training unchanged") {
  for (const Config& cf : configs()) check_oracle(cf, make_stream(250, cf.c, 101), probes());
}

TEST_CASE("averaged PA / BPA on repeated points (folds at BPA-P activation and of x_t in the span)") {
  for (const Config& cf : configs()) {
    if (cf.budget == 0) continue;
    for (Index B : {Index(5), Index(12)}) {
      Config c2 = cf;
      c2.budget = B;
      RowMatrix P;
      const Stream s = repeated_points(400, cf.c, 3, P);
      std::vector<Vector> zs = probes();
      for (Index i = 0; i < 8; ++i) zs.push_back(P.row(i).transpose());
      check_oracle(c2, s, zs);
    }
  }
}

TEST_CASE("averaged PA / BPA: save -> bytes -> load resumes bit for bit") {
  for (const Config& cf : configs()) {
    const Stream s = make_stream(300, cf.c, 103);
    PassiveAggressive a(2, cf.c, pa(cf.budget, cf.v, cf.loss, true));
    a.partial_fit(s.X.topRows(150), s.y.data());
    PassiveAggressive b;
    b.load(FieldMap::from_bytes(bytes_of(a)));
    CHECK(bytes_of(a) == bytes_of(b));
    CHECK(b.params().averaged);
    CHECK(b.average().retired().size() == a.average().retired().size());
    std::vector<std::int32_t> pa_(150), pb(150);
    a.partial_fit(s.X.bottomRows(150), s.y.data() + 150, pa_.data());
    b.partial_fit(s.X.bottomRows(150), s.y.data() + 150, pb.data());
    CHECK(pa_ == pb);
    CHECK(same_model(a, b));
    for (const Vector& z : probes()) CHECK(dec(a, z) == dec(b, z));
    CHECK(bytes_of(a) == bytes_of(b));
  }
}

TEST_CASE("ramp loss, active learning with averaging: skipped examples count as classifiers held") {
  for (int c : {2, 3})
    for (Index budget : {Index(0), Index(6)}) {
      const Index T = 300;
      const Stream s = make_stream(T, c, 107);
      const PAParams p = pa(budget, BPAVariant::Simple, PALoss::Ramp, true);
      PassiveAggressive act(2, c, p), full(2, c, p);
      const std::vector<Vector> zs = probes();
      const Index o = act.n_outputs();
      std::vector<Vector> sum_z(zs.size(), Vector::Zero(o));
      double worst = 0.0;
      int skipped = 0;
      for (Index i = 0; i < T; ++i) {
        std::int32_t pred = -1;
        const bool needed = act.observe(s.X.row(i).data(), &pred);
        if (needed)
          act.learn_one(s.X.row(i).data(), label(s, i));
        else
          ++skipped;
        // A skipped example is predicted as learn_one predicts it (by the average).
        const std::int32_t pf = full.learn_one(s.X.row(i).data(), label(s, i));
        if (!needed) CHECK(pred == pf);
        const Index n = act.support_vectors().size();
        const RowMatrix X = act.support_vectors().X().topRows(n), A = act.coefficients();
        for (std::size_t q = 0; q < zs.size(); ++q) sum_z[q] += eval(p.kernel, X, A, zs[q]);
        const double N = static_cast<double>(i + 2);
        CHECK(act.n_classifiers() == N);
        for (std::size_t q = 0; q < zs.size(); ++q)
          worst = std::max(worst, (dec(act, zs[q]) - sum_z[q] / N).cwiseAbs().maxCoeff());
      }
      CHECK(skipped > 10);
      CHECK(worst <= 1e-10);
      CHECK(same_model(act, full));
      for (const Vector& z : probes()) CHECK(dec(act, z) == dec(full, z));
    }
}

TEST_MAIN()
