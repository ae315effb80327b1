// Kernel OGD / BOGD / BOGD++ (Zhao et al., ICML 2012), checked against: a naive dense kernel
// OGD reference (unbudgeted), the unbudgeted learner itself (budget >= stream length), a Monte
// Carlo test of the unbiased removal (E[f_{t+1} | f_t] = the OGD step, removal frequencies =
// the documented p_i, exact survivor rescaling), BOGD++'s keep probabilities against a
// sort-based water-filling, the explicit mean of every classifier held (averaging through
// removals), save / load round trips, and invalid parameters.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

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
using bk_test::throws_type;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Stream make_stream(Index n, int n_classes, std::uint64_t seed) { return bk_test::noisy_board(n, n_classes, seed, 0.1); }

Vector row_vec(const Stream& s, Index i) { return s.X.row(i).transpose(); }
std::int32_t label(const Stream& s, Index i) { return s.y[static_cast<std::size_t>(i)]; }

BOGDParams bogd(Index budget, BOGDSampling s, double eta, double lambda, bool averaged, std::uint64_t seed = 3) {
  BOGDParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.eta = eta;
  p.lam = lambda;
  p.budget = budget;
  p.sampling = s;
  p.averaged = averaged;
  p.seed = seed;
  return p;
}

const BOGDSampling samplings[] = {BOGDSampling::Uniform, BOGDSampling::NonUniform};

// BOGD++'s keep probabilities by another route than the library's: sort the weights, then
// for m = 0, 1, ... keep the m largest for sure and the rest in proportion, q = c w with
// c = (n - 1 - m) / (their weight), until that is a valid choice (c w <= 1 for the rest,
// c w >= 1 for the m kept). Positive weights only.
Vector keep_reference(const Vector& w) {
  const Index n = w.size();
  std::vector<Index> order(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](Index a, Index b) { return w(a) > w(b); });
  for (Index m = 0; m < n; ++m) {
    double rest = 0.0;
    for (Index k = m; k < n; ++k) rest += w(order[static_cast<std::size_t>(k)]);
    const double c = static_cast<double>(n - 1 - m) / rest;
    const bool rest_ok = c * w(order[static_cast<std::size_t>(m)]) <= 1.0 + 1e-12;
    const bool kept_ok = m == 0 || c * w(order[static_cast<std::size_t>(m - 1)]) >= 1.0 - 1e-12;
    if (rest_ok && kept_ok) {
      Vector q(n);
      for (Index k = 0; k < n; ++k) q(order[static_cast<std::size_t>(k)]) = k < m ? 1.0 : c * w(order[static_cast<std::size_t>(k)]);
      return q;
    }
  }
  return Vector::Constant(n, kNaN);
}

// ---- naive dense kernel OGD (NORMA, hinge loss) ----
struct RefOGD {
  Kernel k;
  double eta, lambda;
  Index c;
  std::vector<Vector> xs, a;
  Vector f(const Vector& z) const {
    Vector out = Vector::Zero(c);
    for (std::size_t j = 0; j < xs.size(); ++j) out += k.value(xs[j], z) * a[j];
    return out;
  }
  void step(const Vector& x, int y) {
    Vector u;
    const double m = direction(f(x), y, u);
    for (auto& row : a) row *= 1.0 - eta * lambda;
    if (m < 1.0 && k.value(x, x) > 0.0) {
      xs.push_back(x);
      a.push_back(eta * u);
    }
  }
};

bool same_state(const BOGD& a, const BOGD& b) {
  const SupportVectors &sa = a.support_vectors(), &sb = b.support_vectors();
  if (sa.size() != sb.size()) return false;
  const Index n = sa.size();
  if (!(sa.X().topRows(n) == sb.X().topRows(n)) || !(a.coefficients() == b.coefficients())) return false;
  for (Index i = 0; i < n; ++i)
    if (sa.id(i) != sb.id(i)) return false;
  const Counters &ca = a.counters(), &cb = b.counters();
  return ca.examples == cb.examples && ca.updates == cb.updates && ca.maintenance == cb.maintenance &&
         ca.degradation == cb.degradation && ca.mistakes == cb.mistakes && ca.labels == cb.labels;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("budget 0: kernel OGD equals a naive dense reference") {
  for (int c : {2, 3})
    for (double lambda : {0.0, 0.05})
      for (double eta : {0.2, 1.0}) {
        const Stream s = make_stream(300, c, 7);
        const BOGDParams p = bogd(0, BOGDSampling::Uniform, eta, lambda, false);
        BOGD l(2, c, p);
        RefOGD ref{p.kernel, eta, lambda, l.n_outputs(), {}, {}};
        double err = 0.0;
        bool same_n = true;
        for (Index i = 0; i < 300 && same_n; ++i) {
          l.learn_one(s.X.row(i).data(), label(s, i));
          ref.step(row_vec(s, i), label(s, i));
          same_n = l.support_vectors().size() == static_cast<Index>(ref.xs.size());
          if (same_n && i % 25 == 24) {
            const RowMatrix A = l.coefficients();
            for (Index j = 0; j < A.rows(); ++j) {
              const auto js = static_cast<std::size_t>(j);
              CHECK(l.support_vectors().x(j).transpose() == ref.xs[js]);
              CHECK(l.support_vectors().id(j) <= i + 1);
              err = std::max(err, (A.row(j).transpose() - ref.a[js]).cwiseAbs().maxCoeff());
            }
          }
        }
        CHECK(same_n);
        CHECK(err <= 1e-12);
        CHECK(ref.xs.size() > 30);
        CHECK(l.counters().updates == static_cast<std::int64_t>(ref.xs.size()));
        CHECK(l.counters().maintenance == 0);
        for (const Vector& z : probes()) CHECK((dec(l, z) - ref.f(z)).cwiseAbs().maxCoeff() <= 1e-10);
        // with lambda > 0 the oldest coefficients did shrink: (1 - eta lambda)^(T - 1) eta |u|
        if (lambda > 0.0 && ref.xs.size() > 0 && l.support_vectors().id(0) == 1)
          CHECK_NEAR(l.coefficients().row(0).cwiseAbs().maxCoeff(), eta * std::pow(1.0 - eta * lambda, 299.0),
                     1e-14);
      }
}

TEST_CASE("hinge threshold: margin exactly 1 only shrinks, margin just below 1 adds eta u k(x_t, .)") {
  BOGDParams p = bogd(0, BOGDSampling::Uniform, 0.5, 0.0, false);
  p.kernel = Kernel(KernelType::Linear);
  for (double lambda : {0.0, 0.1}) {
    p.lam = lambda;
    const double shrink = 1.0 - 0.5 * lambda;
    BOGD l(2, 2, p);
    const double x1[2] = {1.0, 0.0};
    l.learn_one(x1, 1);  // margin 0: alpha = 0.5
    CHECK(l.support_vectors().size() == 1);
    CHECK(l.coefficients()(0, 0) == 0.5);
    const double a1 = 0.5;
    // margin a1 * x1.x2 = 1 exactly
    const double x2[2] = {1.0 / (a1), 0.0};
    l.learn_one(x2, 1);
    CHECK(l.support_vectors().size() == 1);
    CHECK(l.coefficients()(0, 0) == a1 * shrink);
    const double a2 = a1 * shrink;
    const double x3[2] = {(1.0 - 1e-12) / a2, 0.0};  // margin 1 - 1e-12
    l.learn_one(x3, 1);
    CHECK(l.support_vectors().size() == 2);
    if (l.support_vectors().size() == 2) {
      CHECK(l.coefficients()(0, 0) == a2 * shrink);
      CHECK(l.coefficients()(1, 0) == 0.5);
    }
  }
}

TEST_CASE("budget >= stream length equals budget 0 bitwise (both samplings, averaged or not)") {
  for (int c : {2, 3})
    for (BOGDSampling smp : samplings)
      for (bool avg : {false, true}) {
        const Stream s = make_stream(200, c, 9);
        BOGD big(2, c, bogd(200, smp, 0.5, 0.01, avg)), none(2, c, bogd(0, smp, 0.5, 0.01, avg));
        std::vector<std::int32_t> p1(200), p2(200);
        big.partial_fit(s.X, s.y.data(), p1.data());
        none.partial_fit(s.X, s.y.data(), p2.data());
        CHECK(p1 == p2);
        CHECK(same_state(big, none));
        CHECK(big.counters().maintenance == 0);
        CHECK(big.support_vectors().size() > 50);
        for (const Vector& z : probes()) CHECK(dec(big, z) == dec(none, z));
      }
}

TEST_CASE("Monte Carlo: the removal is unbiased, E[f_{t+1}(z)] = (1 - eta lam) f_t(z) + eta u k(x_t, z)") {
  const Index B = 8;
  const int R = 20000;
  for (BOGDSampling smp : samplings)
    for (int c : {2, 3}) {
      const double eta = 0.5, lambda = 0.02, shrink = 1.0 - eta * lambda;
      const BOGDParams p = bogd(B, smp, eta, lambda, false, 17);
      const Stream s = make_stream(200, c, 13);
      BOGD l(2, c, p);
      l.partial_fit(s.X.topRows(60), s.y.data());
      CHECK(l.support_vectors().size() == B);
      CHECK(l.counters().maintenance > 0);  // coefficients already rescaled by earlier removals
      const RowMatrix X0 = l.support_vectors().X().topRows(B), A0 = l.coefficients();
      std::vector<std::int64_t> ids0(l.support_vectors().ids().begin(), l.support_vectors().ids().begin() + B);
      // a fixed example with margin < 1: it is added, so one SV must go
      Index pick = -1;
      Vector u;
      for (Index i = 60; i < 200 && pick < 0; ++i)
        if (direction(eval(p.kernel, X0, A0, row_vec(s, i)), label(s, i), u) < 0.5) pick = i;
      CHECK(pick >= 0);
      if (pick < 0) continue;
      const Vector xs = row_vec(s, pick);
      const int ys = label(s, pick);
      direction(eval(p.kernel, X0, A0, xs), ys, u);
      // documented removal probabilities prob and keep probabilities keep = 1 - prob
      Vector keep(B);
      if (smp == BOGDSampling::Uniform) {
        keep.setConstant(1.0 - 1.0 / B);
      } else {
        Vector w(B);
        for (Index i = 0; i < B; ++i) w(i) = A0.row(i).norm() * std::sqrt(p.kernel.value(X0.row(i), X0.row(i)));
        keep = keep_reference(w);
        CHECK(keep.maxCoeff() - keep.minCoeff() > 0.01);  // really non-uniform in this state
      }
      const Vector prob = (1.0 - keep.array()).matrix();
      CHECK_NEAR(prob.sum(), 1.0, 1e-12);
      // probes: five of the SVs (where a missing rescale would show most) and two other points
      std::vector<Vector> zs;
      for (Index j = 0; j < 5; ++j) zs.push_back(X0.row(j).transpose());
      zs.push_back(probes()[1]);
      zs.push_back(probes()[2]);
      const Index o = l.n_outputs();
      const Index P = static_cast<Index>(zs.size());
      RowMatrix expect(P, o), bias(P, o);
      for (Index q = 0; q < P; ++q) {
        const Vector& z = zs[static_cast<std::size_t>(q)];
        expect.row(q) = (shrink * eval(p.kernel, X0, A0, z) + eta * p.kernel.value(xs, z) * u).transpose();
        // what dropping an SV without rescaling the survivors would shift the mean by
        Vector b = Vector::Zero(o);
        for (Index i = 0; i < B; ++i) b += prob(i) * shrink * p.kernel.value(X0.row(i).transpose(), z) * A0.row(i).transpose();
        bias.row(q) = b.transpose();
      }
      const FieldMap fm = FieldMap::from_bytes(bytes_of(l));
      RowMatrix sum = RowMatrix::Zero(P, o), sum2 = RowMatrix::Zero(P, o);
      std::vector<int> removed(static_cast<std::size_t>(B), 0);
      double rescale_err = 0.0;
      bool new_sv_ok = true;
      BOGD b;
      for (int r = 0; r < R; ++r) {
        b.load(fm);
        b.reseed(static_cast<std::uint64_t>(r) + 1);
        b.learn_one(xs.data(), ys);
        const SupportVectors& sv = b.support_vectors();
        const RowMatrix A = b.coefficients();
        // which old SV left; survivors are exactly shrink alpha_i / (1 - p_i); x_t enters with eta u
        std::vector<bool> present(static_cast<std::size_t>(B), false);
        for (Index j = 0; j < sv.size(); ++j) {
          const auto it = std::find(ids0.begin(), ids0.end(), sv.id(j));
          if (it == ids0.end()) {
            new_sv_ok = new_sv_ok && sv.id(j) == 61 && A.row(j).transpose() == eta * u && sv.x(j).transpose() == xs;
            continue;
          }
          const auto i = static_cast<Index>(it - ids0.begin());
          present[static_cast<std::size_t>(i)] = true;
          const Vector want = shrink * A0.row(i).transpose() / keep(i);
          rescale_err = std::max(rescale_err, (A.row(j).transpose() - want).cwiseAbs().maxCoeff() /
                                                  want.cwiseAbs().maxCoeff());
        }
        int gone = 0;
        for (Index i = 0; i < B; ++i)
          if (!present[static_cast<std::size_t>(i)]) ++gone, ++removed[static_cast<std::size_t>(i)];
        CHECK(gone == 1);
        CHECK(sv.size() == B);
        for (Index q = 0; q < P; ++q) {
          const Vector d = dec(b, zs[static_cast<std::size_t>(q)]);
          sum.row(q) += d.transpose();
          sum2.row(q) += d.cwiseProduct(d).transpose();
        }
      }
      CHECK(new_sv_ok);
      CHECK(rescale_err <= 1e-13);
      const RowMatrix mean = sum / R;
      const RowMatrix var = (sum2 / R - mean.cwiseProduct(mean)) * (double(R) / (R - 1));
      const RowMatrix se = (var.array().max(0.0) / R).sqrt().matrix();
      double worst_z = 0.0, worst_rel = 0.0, power = 0.0;
      for (Index q = 0; q < P; ++q)
        for (Index k = 0; k < o; ++k) {
          if (!(se(q, k) > 0.0)) continue;
          worst_z = std::max(worst_z, std::abs(mean(q, k) - expect(q, k)) / se(q, k));
          worst_rel = std::max(worst_rel, std::abs(mean(q, k) - expect(q, k)) / (se(q, k) * std::sqrt(double(R))));
          power = std::max(power, std::abs(bias(q, k)) / se(q, k));
        }
      CHECK(worst_z <= 4.0);
      CHECK(worst_rel <= 0.03);  // |mean - expected| small against the spread of one draw
      CHECK(power >= 10.0);      // a missing rescale would be seen
      // removal frequencies match p_i; every SV with p_i > 0 can go
      int distinct = 0, can_go = 0;
      for (Index i = 0; i < B; ++i) {
        const double fr = removed[static_cast<std::size_t>(i)] / double(R);
        CHECK(std::abs(fr - prob(i)) <= 4.0 * std::sqrt(prob(i) * (1.0 - prob(i)) / R) + 1e-12);
        if (removed[static_cast<std::size_t>(i)] > 0) ++distinct;
        if (prob(i) > 0.0) ++can_go;
      }
      CHECK(distinct == can_go);
      CHECK(can_go >= B - 1);
      // same seed, same removal
      BOGD b1, b2;
      b1.load(fm);
      b2.load(fm);
      b1.reseed(99);
      b2.reseed(99);
      b1.learn_one(xs.data(), ys);
      b2.learn_one(xs.data(), ys);
      CHECK(same_state(b1, b2));
    }
}

TEST_CASE("BOGD++ keep probabilities: q proportional to w, capped at 1, summing to n - 1") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  int capped_cases = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const Index n = 2 + static_cast<Index>(trial % 12);
    Vector w(n);
    for (Index i = 0; i < n; ++i) w(i) = std::exp(6.0 * (unif(rng) - 0.5));  // weights spread over e^6
    if (trial % 3 == 0) w(trial % n) *= 50.0;                               // one heavy SV
    Vector q = w;
    detail::bogd_keep_probabilities(q);
    const Vector want = keep_reference(w);
    CHECK((q - want).cwiseAbs().maxCoeff() <= 1e-12);
    CHECK_NEAR(q.sum(), static_cast<double>(n - 1), 1e-12);
    CHECK(q.maxCoeff() <= 1.0);
    CHECK(q.minCoeff() >= 0.0);
    if (q.maxCoeff() == 1.0) ++capped_cases;
    // uncapped: exactly the paper's 1 - (n - 1) w_i / sum_j w_j as the discard probability
    if (w.maxCoeff() <= w.sum() / static_cast<double>(n - 1))
      for (Index i = 0; i < n; ++i) CHECK_NEAR(1.0 - q(i), 1.0 - (n - 1) * w(i) / w.sum(), 1e-12);
    // scale-free
    Vector q2 = (1e-200 * w).eval();
    detail::bogd_keep_probabilities(q2);
    CHECK((q2 - q).cwiseAbs().maxCoeff() <= 1e-12);
  }
  CHECK(capped_cases > 100);
  // zero weights: one of them goes, uniformly; inf outweighs everything
  Vector z(4);
  z << 0.0, 2.0, 0.0, 1.0;
  detail::bogd_keep_probabilities(z);
  CHECK(z == (Vector(4) << 0.5, 1.0, 0.5, 1.0).finished());
  Vector inf(3);
  inf << 1.0, std::numeric_limits<double>::infinity(), 1e300;
  detail::bogd_keep_probabilities(inf);
  CHECK(inf == (Vector(3) << 0.5, 1.0, 0.5).finished());
  Vector big(3);
  big << 1.7e308, 1.7e308, 1.7e308;  // their sum overflows
  detail::bogd_keep_probabilities(big);
  CHECK((big.array() - 2.0 / 3.0).abs().maxCoeff() <= 1e-15);
}

TEST_CASE("budget 1: the single SV is always replaced") {
  BOGD l(2, 2, bogd(1, BOGDSampling::NonUniform, 0.5, 0.0, true));
  const Stream s = make_stream(100, 2, 19);
  for (Index i = 0; i < 100; ++i) {
    l.learn_one(s.X.row(i).data(), label(s, i));
    CHECK(l.support_vectors().size() <= 1);
    if (l.counters().updates > 0) CHECK(l.support_vectors().id(0) <= i + 1);
  }
  CHECK(l.counters().maintenance == l.counters().updates - 1);
  CHECK(l.average().retired().size() == l.counters().maintenance);
}

TEST_CASE("averaging through removals: decision = explicit mean of f_1..f_{t+1}; predictions use f_1..f_t") {
  for (BOGDSampling smp : samplings)
    for (int c : {2, 3})
      for (Index budget : {Index(0), Index(5)})
        for (double lambda : {0.0, 0.02}) {
          const Index T = budget > 0 ? 300 : 200;
          const Stream s = make_stream(T, c, 23);
          const BOGDParams p = bogd(budget, smp, 0.5, lambda, true, 29);
          BOGD l(2, c, p), plain(2, c, bogd(budget, smp, 0.5, lambda, false, 29));
          const std::vector<Vector> zs = probes();
          const Index o = l.n_outputs();
          std::vector<Vector> sum_z(zs.size(), Vector::Zero(o));
          RowMatrix sum_x = RowMatrix::Zero(T, o);
          double worst = 0.0, worst_pred = 0.0;
          int pred_mismatch = 0, checked = 0;
          bool same_training = true;
          for (Index i = 0; i < T; ++i) {
            const Vector x = row_vec(s, i);
            const Vector mean_x = sum_x.row(i).transpose() / static_cast<double>(i + 1);
            worst_pred = std::max(worst_pred, (dec(l, x) - mean_x).cwiseAbs().maxCoeff());
            const std::int32_t pr = l.learn_one(x.data(), label(s, i));
            plain.learn_one(x.data(), label(s, i));
            Index best = 0;
            if (c == 2)
              best = mean_x(0) > 0.0 ? 1 : 0;
            else
              mean_x.maxCoeff(&best);
            Vector u;
            const double gap = c == 2 ? std::abs(mean_x(0)) : std::abs(direction(mean_x, static_cast<int>(best), u));
            if (gap > 1e-9) {
              ++checked;
              if (pr != best) ++pred_mismatch;
            }
            const Index n = l.support_vectors().size();
            const RowMatrix X = l.support_vectors().X().topRows(n), A = l.coefficients();
            same_training = same_training && plain.support_vectors().size() == n &&
                            plain.support_vectors().X().topRows(n) == X && plain.coefficients() == A;
            for (std::size_t q = 0; q < zs.size(); ++q) sum_z[q] += eval(p.kernel, X, A, zs[q]);
            for (Index j = i + 1; j < T; ++j) sum_x.row(j) += eval(p.kernel, X, A, row_vec(s, j)).transpose();
            const double N = static_cast<double>(i + 2);
            for (std::size_t q = 0; q < zs.size(); ++q)
              worst = std::max(worst, (dec(l, zs[q]) - sum_z[q] / N).cwiseAbs().maxCoeff());
          }
          CHECK(same_training);
          CHECK(worst <= 1e-10);
          CHECK(worst_pred <= 1e-10);
          CHECK(pred_mismatch == 0);
          CHECK(checked > T / 2);
          const Index n = l.support_vectors().size(), r = l.average().retired().size();
          CHECK(l.average().size(l.support_vectors()) == n + r);
          CHECK(r == l.counters().maintenance);  // every discarded SV keeps its sum
          if (budget > 0) CHECK(r > 20);
          // Model reads the averaged predictor (current + retired SVs)
          FieldMap fm;
          l.save(fm);
          const Model m(FieldMap::from_bytes(fm.to_bytes()));
          CHECK(m.n_support() == n + r);
          RowMatrix P(static_cast<Index>(zs.size()), 2);
          for (std::size_t q = 0; q < zs.size(); ++q) P.row(static_cast<Index>(q)) = zs[q].transpose();
          RowMatrix D(P.rows(), o);
          l.decision_function(P, D);
          CHECK((m.decision_function(P) - D).cwiseAbs().maxCoeff() <= 1e-12);
        }
}

TEST_CASE("save -> bytes -> load resumes bit for bit (averaged on and off)") {
  for (BOGDSampling smp : samplings)
    for (int c : {2, 3})
      for (bool avg : {false, true})
        for (Index budget : {Index(0), Index(6)}) {
          const Stream s = make_stream(400, c, 37);
          const BOGDParams p = bogd(budget, smp, 0.4, 0.01, avg, 41);
          BOGD a(2, c, p), same(2, c, p), other(2, c, bogd(budget, smp, 0.4, 0.01, avg, 42));
          a.partial_fit(s.X.topRows(200), s.y.data());
          same.partial_fit(s.X.topRows(200), s.y.data());
          other.partial_fit(s.X.topRows(200), s.y.data());
          CHECK(bytes_of(a) == bytes_of(same));
          if (budget > 0) CHECK(!same_state(a, other));  // the seed drives the removals
          BOGD loaded;
          loaded.load(FieldMap::from_bytes(bytes_of(a)));
          CHECK(bytes_of(loaded) == bytes_of(a));
          std::vector<std::int32_t> pa(200), pl(200);
          a.partial_fit(s.X.bottomRows(200), s.y.data() + 200, pa.data());
          loaded.partial_fit(s.X.bottomRows(200), s.y.data() + 200, pl.data());
          CHECK(pa == pl);
          CHECK(same_state(a, loaded));
          for (const Vector& z : probes()) CHECK(dec(a, z) == dec(loaded, z));
          CHECK(bytes_of(a) == bytes_of(loaded));
          if (avg && budget > 0) CHECK(loaded.average().retired().size() > 0);
        }
}

TEST_CASE("invalid parameters throw invalid_argument; corrupt model files throw runtime_error") {
  auto bad = [](BOGDParams p) { return throws_type([&] { BOGD l(2, 2, p); }, 0); };
  const BOGDParams ok = bogd(4, BOGDSampling::Uniform, 0.5, 0.1, false);
  CHECK(!bad(ok));
  BOGDParams p = ok;
  p.eta = 1.0, p.lam = 1.0;  // eta lambda = 1
  CHECK(bad(p));
  p.eta = 2.0, p.lam = 0.75;
  CHECK(bad(p));
  p = ok, p.lam = -0.1;
  CHECK(bad(p));
  p = ok, p.lam = kNaN;
  CHECK(bad(p));
  p = ok, p.eta = 0.0;
  CHECK(bad(p));
  p = ok, p.eta = -1.0;
  CHECK(bad(p));
  p = ok, p.eta = kNaN;
  CHECK(bad(p));
  p = ok, p.budget = -1;
  CHECK(bad(p));
  p = ok, p.sampling = static_cast<BOGDSampling>(2);
  CHECK(bad(p));
  p = ok, p.eta = 1.9, p.lam = 0.5;  // eta lambda = 0.95 < 1: valid
  CHECK(!bad(p));

  const Stream s = make_stream(200, 3, 43);
  BOGD l(2, 3, bogd(6, BOGDSampling::NonUniform, 0.5, 0.01, true));
  l.partial_fit(s.X, s.y.data());
  const std::string good = bytes_of(l);
  auto load_fails = [&](const std::string& bytes) {
    BOGD target(2, 3, bogd(6, BOGDSampling::NonUniform, 0.5, 0.01, true));
    target.partial_fit(s.X.topRows(20), s.y.data());
    const std::string orig = bytes_of(target);
    const bool threw = throws_type([&] { target.load(FieldMap::from_bytes(bytes)); }, 1);
    return threw && bytes_of(target) == orig;
  };
  auto edited = [&](auto&& edit) {
    FieldMap fm = FieldMap::from_bytes(good);
    edit(fm);
    return fm.to_bytes();
  };
  CHECK(!load_fails(good));
  CHECK(load_fails(good.substr(0, good.size() - 1)));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_bytes("learner", "spa"); })));
  {
    SparsePA spa_l(2, 3, SPAParams{});
    spa_l.partial_fit(s.X, s.y.data());
    CHECK(load_fails(bytes_of(spa_l)));
  }
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("lambda", 2.0); })));  // eta lambda >= 1
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("lambda", -1.0); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("sampling", 2); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("budget", 2); })));  // more SVs than the budget
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("averaged", 0); })));
  CHECK(load_fails(edited([](FieldMap& fm) {
    RowMatrix S = fm.get_matrix("avg.retired.sum");
    fm.set_matrix("avg.retired.sum", S.topRows(S.rows() - 1));
  })));
  CHECK(load_fails(edited([](FieldMap& fm) {
    RowMatrix S = fm.get_matrix("avg.retired.x");
    S(0, 0) = kNaN;
    fm.set_matrix("avg.retired.x", S);
  })));
}

TEST_MAIN()
