// Sparse Passive-Aggressive learning (Lu, Zhao & Hoi, SDM 2016; the SPA paper), checked
// against: a naive dense reference of Algorithm 1 / Proposition 1 (forced sampling and a
// replica of the learner's generator), PA-I (the limit alpha = beta = eta -> large), the
// explicit mean of every classifier held (SPA-avg), Theorem 3.2 (E #SV = E sum rho_t) by
// Monte Carlo, save / load round trips, and invalid parameters / corrupt model files.
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
const double kInf = std::numeric_limits<double>::infinity();

Stream make_stream(Index n, int n_classes, std::uint64_t seed) { return bk_test::noisy_board(n, n_classes, seed, 0.1); }

Vector row_vec(const Stream& s, Index i) { return s.X.row(i).transpose(); }
std::int32_t label(const Stream& s, Index i) { return s.y[static_cast<std::size_t>(i)]; }

// Raw uniform double of the learner's documented algorithm: (x >> 11) 2^-53.
double u01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0); }

// ---- naive dense reference of Algorithm 1 with the closed form of Proposition 1 ----
struct RefSPA {
  Kernel k;
  double alpha, beta, eta;
  Index c;
  bool force;
  std::mt19937_64 rng;
  std::vector<Vector> xs, a;
  std::vector<std::int64_t> ids;
  std::int64_t t = 0;
  double rho_sum = 0.0;
  int eta_branch = 0, loss_branch = 0;

  RefSPA(const SPAParams& p, Index outputs, bool forced)
      : k(p.kernel), alpha(p.alpha), beta(p.beta), eta(p.eta), c(outputs), force(forced), rng(p.seed) {}

  Vector f(const Vector& z) const {
    Vector out = Vector::Zero(c);
    for (std::size_t j = 0; j < xs.size(); ++j) out += k.value(xs[j], z) * a[j];
    return out;
  }
  void step(const Vector& x, int y) {
    ++t;
    Vector u;
    const double m = direction(f(x), y, u);
    const double L = 1.0 - m, kap = k.value(x, x);
    if (!(L > 0.0) || !(kap > 0.0)) return;  // rho = 0: Z = 0, no draw
    const double rho = std::min(alpha, L) / beta;
    rho_sum += rho;
    const bool z = force || u01(rng) < rho;
    if (!z) return;
    const double t_eta = eta / rho, t_loss = L / (u.squaredNorm() * kap);
    if (t_eta < t_loss)
      ++eta_branch;
    else
      ++loss_branch;
    xs.push_back(x);
    a.push_back(std::min(t_eta, t_loss) * u);
    ids.push_back(t);
  }
};

// Learner == reference: same SVs (bitwise), same ids, coefficients within `tol` (relative to
// max(1, |a|)). Returns the max relative coefficient error.
double compare(const SparsePA& l, const RefSPA& r, double tol) {
  const SupportVectors& sv = l.support_vectors();
  CHECK(sv.size() == static_cast<Index>(r.xs.size()));
  if (sv.size() != static_cast<Index>(r.xs.size())) return kInf;
  const RowMatrix A = l.coefficients();
  double err = 0.0;
  for (Index j = 0; j < sv.size(); ++j) {
    const auto js = static_cast<std::size_t>(j);
    CHECK(sv.id(j) == r.ids[js]);
    CHECK(sv.x(j).transpose() == r.xs[js]);
    const double scale = std::max(1.0, r.a[js].cwiseAbs().maxCoeff());
    err = std::max(err, (A.row(j).transpose() - r.a[js]).cwiseAbs().maxCoeff() / scale);
  }
  CHECK(err <= tol);
  CHECK(l.counters().updates == static_cast<std::int64_t>(r.xs.size()));
  CHECK_NEAR(l.expected_support(), r.rho_sum, 1e-10 * std::max(1.0, r.rho_sum));
  return err;
}

SPAParams spa(double alpha, double beta, double eta, bool averaged, std::uint64_t seed = 7) {
  SPAParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.alpha = alpha;
  p.beta = beta;
  p.eta = eta;
  p.averaged = averaged;
  p.seed = seed;
  return p;
}

// The injected sampling policy of forced sampling: Z_t = 1 whenever rho_t > 0, no draw (the
// step size still uses rho_t), so that the steps can be compared with Proposition 1.
bool always_sample(std::mt19937_64&, double) { return true; }
SPASampling sampling(bool forced) { return forced ? always_sample : spa_bernoulli; }

// Every field of two model files equal except the counters (which count examples).
bool same_except_counters(const FieldMap& before, FieldMap after) {
  for (const char* n : {"count.examples", "count.updates", "count.maintenance", "count.mistakes", "count.labels"})
    after.set_int(n, before.get_i64(n));
  after.set("count.degradation", before.get_f64("count.degradation"));
  return after.to_bytes() == before.to_bytes();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("forced sampling: every positive-loss example is added with Proposition 1's tau") {
  const Kernel kernels[] = {Kernel(KernelType::RBF, 1.0), Kernel(KernelType::Polynomial, 0.5, 2, 1.0)};
  for (int c : {2, 3})
    for (const Kernel& k : kernels)
      for (double eta : {0.02, 50.0})
        for (double alpha : {0.5, 1.0}) {
          SPAParams p = spa(alpha, 5.0, eta, false);
          p.kernel = k;
          const Stream s = make_stream(300, c, 11 + static_cast<std::uint64_t>(c));
          SparsePA l(2, c, p, always_sample);
          RefSPA ref(p, l.n_outputs(), true);
          for (Index i = 0; i < 300; ++i) {
            l.learn_one(s.X.row(i).data(), label(s, i));
            ref.step(row_vec(s, i), label(s, i));
            if (i % 50 == 49 && compare(l, ref, 1e-12) > 1e-12) break;
          }
          compare(l, ref, 1e-12);
          CHECK(ref.xs.size() > 20);
          // small eta: both branches of the min are taken; large eta: only L / (|u|^2 k).
          if (eta < 1.0) {
            CHECK(ref.eta_branch > 0);
            CHECK(ref.loss_branch > 0);
          } else {
            CHECK(ref.eta_branch == 0);
          }
          // f of the learner = f of the reference at fresh points
          for (const Vector& z : probes()) CHECK((dec(l, z) - ref.f(z)).cwiseAbs().maxCoeff() <= 1e-10);
        }
}

TEST_CASE("alpha = beta = eta = 1e6 with forced sampling equals unbudgeted PA-I with C = 1e6") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(400, c, 21);
    SparsePA spa_l(2, c, spa(1e6, 1e6, 1e6, false), always_sample);
    PAParams pp;
    pp.kernel = Kernel(KernelType::RBF, 1.0);
    pp.C = 1e6;
    pp.pa_type = 1;
    pp.budget = 0;
    PassiveAggressive pa(2, c, pp);
    double rho_sum = 0.0;
    bool same = true;
    for (Index i = 0; i < 400 && same; ++i) {
      Vector f(pa.n_outputs()), u;
      pa.decision(s.X.row(i).data(), f.data());
      const double L = 1.0 - direction(f, label(s, i), u);
      if (L > 0.0) rho_sum += L / 1e6;
      const std::int32_t p1 = spa_l.learn_one(s.X.row(i).data(), label(s, i));
      const std::int32_t p2 = pa.learn_one(s.X.row(i).data(), label(s, i));
      const Index n = pa.support_vectors().size();
      same = p1 == p2 && spa_l.support_vectors().size() == n &&
             spa_l.support_vectors().X().topRows(n) == pa.support_vectors().X().topRows(n) &&
             (spa_l.coefficients() - pa.coefficients()).cwiseAbs().maxCoeff() <= 1e-12;
      for (Index j = 0; j < n && same; ++j) same = spa_l.support_vectors().id(j) == pa.support_vectors().id(j);
    }
    CHECK(same);
    CHECK(pa.support_vectors().size() > 50);
    CHECK(spa_l.counters().updates == pa.counters().updates);
    CHECK(spa_l.counters().mistakes == pa.counters().mistakes);
    CHECK_NEAR(spa_l.expected_support(), rho_sum, 1e-12);
  }
}

TEST_CASE("zero loss (rho = 0) or k(x, x) = 0: nothing changes and no random number is drawn") {
  for (int c : {2, 3}) {
    const Stream s = make_stream(300, c, 31);
    SparsePA l(2, c, spa(1.0, 2.0, 1.0, false, 3));
    l.partial_fit(s.X.topRows(200), s.y.data());
    // points the current model classifies with margin >= 1 (binary |f| >= 1, multi-class
    // top-two gap >= 1), labelled with the predicted class: loss 0.
    std::vector<Vector> pts;
    std::vector<std::int32_t> ys;
    for (int i = 0; i <= 40; ++i)
      for (int j = 0; j <= 40; ++j) {
        Vector z(2);
        z << -2.0 + 0.1 * i, -2.0 + 0.1 * j;
        const Vector f = dec(l, z);
        int y;
        if (c == 2) {
          y = f(0) > 0.0 ? 1 : 0;
        } else {
          Index b;
          f.maxCoeff(&b);
          y = static_cast<int>(b);
        }
        Vector u;
        if (direction(f, y, u) >= 1.0 + 1e-9) pts.push_back(z), ys.push_back(y);
      }
    CHECK(pts.size() >= 10);
    RowMatrix Z(static_cast<Index>(pts.size()), 2);
    for (std::size_t i = 0; i < pts.size(); ++i) Z.row(static_cast<Index>(i)) = pts[i].transpose();
    FieldMap before;
    l.save(before);
    SparsePA twin = l;  // never sees the zero-loss examples
    const double rho_before = l.expected_support();
    std::vector<std::int32_t> pred(pts.size());
    l.partial_fit(Z, ys.data(), pred.data());
    CHECK(pred == ys);
    FieldMap after;
    l.save(after);
    CHECK(after.get_i64("count.examples") == before.get_i64("count.examples") + Z.rows());
    CHECK(after.get_bytes("rng") == before.get_bytes("rng"));
    CHECK(l.expected_support() == rho_before);
    CHECK(same_except_counters(before, after));
    // Same later behaviour: identical draws on a continuation (ids shift by the extra examples).
    for (Index i = 200; i < 300; ++i) {
      l.learn_one(s.X.row(i).data(), label(s, i));
      twin.learn_one(s.X.row(i).data(), label(s, i));
    }
    const Index n = l.support_vectors().size();
    CHECK(n == twin.support_vectors().size());
    CHECK(n > before.get_matrix("sv.x").rows());  // the continuation did sample
    if (n == twin.support_vectors().size()) {
      CHECK(l.support_vectors().X().topRows(n) == twin.support_vectors().X().topRows(n));
      CHECK(l.coefficients() == twin.coefficients());
    }
  }
  // k(x, x) = 0 (linear kernel, x = 0): loss 1 but no step, no rho, no draw.
  SPAParams p = spa(1.0, 1.0, 1.0, false);
  p.kernel = Kernel(KernelType::Linear);
  SparsePA l(2, 2, p);
  const Stream s = make_stream(50, 2, 5);
  l.partial_fit(s.X, s.y.data());
  FieldMap before, after;
  l.save(before);
  const double zero[2] = {0.0, 0.0};
  l.learn_one(zero, 1);
  l.learn_one(zero, 0);
  l.save(after);
  CHECK(same_except_counters(before, after));
}

TEST_CASE("loss threshold: margin exactly 1 is passed over, margin 1 - 1e-12 is a (tiny) update") {
  SPAParams p = spa(0.5, 2.0, 10.0, false);
  p.kernel = Kernel(KernelType::Linear);
  SparsePA l(2, 2, p, always_sample);
  const double x1[2] = {1.0, 0.0};
  l.learn_one(x1, 0);  // L = 1, rho = min(0.5, 1) / 2, tau = min(10 / 0.25, 1 / 1) = 1: alpha = -1
  CHECK(l.support_vectors().size() == 1);
  CHECK(l.coefficients()(0, 0) == -1.0);
  CHECK(l.expected_support() == 0.25);
  const double x2[2] = {-1.0, 0.0};  // margin exactly 1 for y = 1
  l.learn_one(x2, 1);
  CHECK(l.support_vectors().size() == 1);
  CHECK(l.expected_support() == 0.25);
  const double x3[2] = {-(1.0 - 1e-12), 0.0};  // margin 1 - 1e-12: L ~ 1e-12
  l.learn_one(x3, 1);
  CHECK(l.support_vectors().size() == 2);
  const double L = 1.0 - (1.0 - 1e-12);
  CHECK_NEAR(l.expected_support(), 0.25 + L / 2.0, 1e-20);
  if (l.support_vectors().size() == 2) CHECK_NEAR(l.coefficients()(1, 0), L / ((1.0 - 1e-12) * (1.0 - 1e-12)), 1e-20);
}

TEST_CASE("seeded reproducibility; save -> bytes -> load resumes bit for bit; Model predicts the average") {
  for (int c : {2, 3})
    for (bool avg : {false, true}) {
      const Stream s = make_stream(600, c, 41);
      const SPAParams p = spa(1.0, 3.0, 0.5, avg, 9);
      SparsePA a(2, c, p), b(2, c, p), other(2, c, spa(1.0, 3.0, 0.5, avg, 10));
      a.partial_fit(s.X.topRows(300), s.y.data());
      b.partial_fit(s.X.topRows(300), s.y.data());
      other.partial_fit(s.X.topRows(300), s.y.data());
      CHECK(bytes_of(a) == bytes_of(b));
      CHECK(bytes_of(a) != bytes_of(other));  // the seed matters
      CHECK(a.support_vectors().size() < 300);                         // sampling skipped examples

      SparsePA loaded;
      loaded.load(FieldMap::from_bytes(bytes_of(a)));
      CHECK(bytes_of(loaded) == bytes_of(a));
      CHECK(loaded.n_classifiers() == a.n_classifiers());
      std::vector<std::int32_t> pa(300), pl(300);
      a.partial_fit(s.X.bottomRows(300), s.y.data() + 300, pa.data());
      loaded.partial_fit(s.X.bottomRows(300), s.y.data() + 300, pl.data());
      CHECK(pa == pl);
      const Index n = a.support_vectors().size();
      CHECK(n == loaded.support_vectors().size());
      if (n == loaded.support_vectors().size()) {
        CHECK(a.coefficients() == loaded.coefficients());
        CHECK(a.support_vectors().X().topRows(n) == loaded.support_vectors().X().topRows(n));
      }
      CHECK(a.expected_support() == loaded.expected_support());
      for (const Vector& z : probes()) CHECK(dec(a, z) == dec(loaded, z));
      CHECK(bytes_of(a) == bytes_of(loaded));

      // budgetkernel::Model reads the file and predicts what the learner predicts.
      FieldMap fm;
      a.save(fm);
      const Model m(FieldMap::from_bytes(fm.to_bytes()));
      RowMatrix P(5, 2);
      for (Index i = 0; i < 5; ++i) P.row(i) = probes()[static_cast<std::size_t>(i)].transpose();
      RowMatrix D(5, a.n_outputs());
      a.decision_function(P, D);
      CHECK((m.decision_function(P) - D).cwiseAbs().maxCoeff() <= 1e-12);
      CHECK(m.n_support() == n);  // SPA never retires an SV: the average is as sparse
      // ... and with averaging that is the average, not the last classifier.
      double gap = 0.0;
      for (Index i = 0; i < 5; ++i)
        gap = std::max(gap, (D.row(i).transpose() - eval(p.kernel, a.support_vectors().X().topRows(n),
                                                         a.coefficients(), P.row(i).transpose()))
                                .cwiseAbs()
                                .maxCoeff());
      if (avg)
        CHECK(gap > 1e-3);
      else
        CHECK(gap <= 1e-12);
    }
}

TEST_CASE("SPA-avg: decision is the explicit mean of f_1..f_{t+1}; predictions use f_1..f_t") {
  for (int c : {2, 3})
    for (bool force : {false, true}) {
      const Index T = 300;
      const Stream s = make_stream(T, c, 51);
      const SPAParams p = spa(1.0, 2.0, 0.3, true, 4);
      SparsePA l(2, c, p, sampling(force)), plain(2, c, spa(1.0, 2.0, 0.3, false, 4), sampling(force));
      const std::vector<Vector> zs = probes();
      const Index o = l.n_outputs();
      // running sums of f_k over the probes and over the stream points (f_1 = 0)
      std::vector<Vector> sum_z(zs.size(), Vector::Zero(o));
      RowMatrix sum_x = RowMatrix::Zero(T, o);
      double worst = 0.0, worst_pred = 0.0;
      int pred_mismatch = 0, checked = 0;
      for (Index i = 0; i < T; ++i) {
        const Vector x = row_vec(s, i);
        // prequential prediction: the mean of f_1..f_t (t = i + 1 classifiers so far)
        const Vector mean_x = sum_x.row(i).transpose() / static_cast<double>(i + 1);
        worst_pred = std::max(worst_pred, (dec(l, x) - mean_x).cwiseAbs().maxCoeff());
        const std::int32_t pr = l.learn_one(x.data(), label(s, i));
        plain.learn_one(x.data(), label(s, i));
        Vector u;
        const int y_star = c == 2 ? (mean_x(0) > 0.0 ? 1 : 0) : [&] {
          Index b;
          mean_x.maxCoeff(&b);
          return static_cast<int>(b);
        }();
        // skip near ties between the top classes
        const double gap = c == 2 ? std::abs(mean_x(0)) : std::abs(direction(mean_x, y_star, u));
        if (gap > 1e-9) {
          ++checked;
          if (pr != y_star) ++pred_mismatch;
        }
        // the classifier f_{t+1} just produced
        const Index n = l.support_vectors().size();
        const RowMatrix X = l.support_vectors().X().topRows(n), A = l.coefficients();
        for (std::size_t q = 0; q < zs.size(); ++q) sum_z[q] += eval(p.kernel, X, A, zs[q]);
        for (Index j = i + 1; j < T; ++j) sum_x.row(j) += eval(p.kernel, X, A, row_vec(s, j)).transpose();
        const double N = static_cast<double>(i + 2);
        CHECK(l.n_classifiers() == N);
        for (std::size_t q = 0; q < zs.size(); ++q)
          worst = std::max(worst, (dec(l, zs[q]) - sum_z[q] / N).cwiseAbs().maxCoeff());
        // averaging does not change training
        CHECK(plain.coefficients() == A);
      }
      CHECK(worst <= 1e-10);
      CHECK(worst_pred <= 1e-10);
      CHECK(pred_mismatch == 0);
      CHECK(checked > T / 2);
      CHECK(l.average().size(l.support_vectors()) == l.support_vectors().size());
      CHECK(l.average().retired().size() == 0);
      // the mean differs from the last classifier (the test would notice a missing average)
      const Index n = l.support_vectors().size();
      CHECK((dec(l, zs[1]) - eval(p.kernel, l.support_vectors().X().topRows(n), l.coefficients(), zs[1]))
                .cwiseAbs()
                .maxCoeff() > 1e-3);
    }
}

TEST_CASE("sampling: Z_t = [U_t < rho_t] from the seeded generator; expected_support = sum rho_t") {
  for (int c : {2, 3})
    for (double eta : {0.05, 2.0}) {
      const SPAParams p = spa(0.8, 4.0, eta, false, 123);
      const Stream s = make_stream(500, c, 61);
      SparsePA l(2, c, p);
      RefSPA ref(p, l.n_outputs(), false);
      for (Index i = 0; i < 500; ++i) {
        l.learn_one(s.X.row(i).data(), label(s, i));
        ref.step(row_vec(s, i), label(s, i));
      }
      compare(l, ref, 1e-12);
      CHECK(ref.xs.size() > 10);
      CHECK(ref.xs.size() < 400);  // many positive-loss examples were not sampled
    }
  // Theorem 3.2: E[#SV] = E[sum_t rho_t] (each Z_t has conditional mean rho_t), over seeds.
  const int R = 400;
  const Stream s = make_stream(200, 2, 71);
  double sum_d = 0.0, sum_d2 = 0.0, sum_rho = 0.0;
  for (int r = 0; r < R; ++r) {
    SparsePA l(2, 2, spa(1.0, 3.0, 0.5, false, 1000 + static_cast<std::uint64_t>(r)));
    l.partial_fit(s.X, s.y.data());
    const double d = static_cast<double>(l.support_vectors().size()) - l.expected_support();
    sum_d += d;
    sum_d2 += d * d;
    sum_rho += l.expected_support();
  }
  const double mean = sum_d / R, var = (sum_d2 - R * mean * mean) / (R - 1), se = std::sqrt(var / R);
  CHECK(se > 0.0);
  CHECK(std::abs(mean) <= 4.0 * se);
  CHECK(sum_rho / R > 10.0);
}

TEST_CASE("invalid parameters throw invalid_argument; corrupt model files throw runtime_error") {
  auto bad = [](double alpha, double beta, double eta) {
    return throws_type([&] { SparsePA l(2, 2, spa(alpha, beta, eta, false)); }, 0);
  };
  CHECK(bad(1.0, 0.5, 1.0));  // beta < alpha
  CHECK(bad(1.0, 1.0, 0.0));  // eta = 0
  CHECK(bad(1.0, 1.0, -1.0));
  CHECK(bad(0.0, 1.0, 1.0));  // alpha = 0
  CHECK(bad(-1.0, 1.0, 1.0));
  CHECK(bad(kNaN, 1.0, 1.0));
  CHECK(bad(1.0, kNaN, 1.0));
  CHECK(bad(1.0, 1.0, kNaN));
  CHECK(bad(1.0, kInf, 1.0));
  CHECK(bad(1.0, 1.0, kInf));
  CHECK(!bad(1.0, 1.0, 1.0));  // beta = alpha is valid
  CHECK(throws_type([] { SparsePA l(0, 2, spa(1, 1, 1, false)); }, 0));
  CHECK(throws_type([] { SparsePA l(2, 1, spa(1, 1, 1, false)); }, 0));

  const Stream s = make_stream(200, 3, 81);
  SparsePA l(2, 3, spa(1.0, 2.0, 1.0, true));
  l.partial_fit(s.X, s.y.data());
  const std::string good = bytes_of(l);
  auto load_fails = [&](const std::string& bytes) {
    SparsePA target(2, 3, spa(1.0, 2.0, 1.0, true));
    target.partial_fit(s.X.topRows(20), s.y.data());
    const std::string orig = bytes_of(target);
    const bool threw = throws_type([&] { target.load(FieldMap::from_bytes(bytes)); }, 1);
    return threw && bytes_of(target) == orig;  // all or nothing
  };
  auto edited = [&](auto&& edit) {
    FieldMap fm = FieldMap::from_bytes(good);
    edit(fm);
    return fm.to_bytes();
  };
  CHECK(!load_fails(good));
  CHECK(load_fails(good.substr(0, good.size() - 9)));  // truncated
  CHECK(load_fails(good.substr(0, 10)));
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x5A;
  CHECK(load_fails(flipped));  // checksum
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_bytes("learner", "pa"); })));
  {
    PassiveAggressive pa(2, 3, PAParams{});
    pa.partial_fit(s.X, s.y.data());
    CHECK(load_fails(bytes_of(pa)));  // a PA model is not an SPA model
  }
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("beta", 0.5); })));  // beta < alpha
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("eta", -1.0); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("rho_sum", -1.0); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set("rho_sum", kNaN); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_bytes("rng", "garbage"); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("averaged", 0); })));  // flag vs avg state
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("avg.on", 0); })));
  // force_sample is reserved: always written as 0, any other value refused
  CHECK(FieldMap::from_bytes(good).get_i64("force_sample") == 0);
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("force_sample", 1); })));
  CHECK(load_fails(edited([](FieldMap& fm) { fm.set_int("n_classes", 2); })));
  CHECK(load_fails(edited([](FieldMap& fm) {
    auto ids = fm.get_ints("sv.id");
    ids[0] = 100000;  // an SV from the future
    fm.set_ints("sv.id", ids);
  })));
  CHECK(load_fails(edited([](FieldMap& fm) {
    RowMatrix C = fm.get_matrix("avg.carry");
    C(0, 0) = kNaN;
    fm.set_matrix("avg.carry", C);
  })));
  CHECK(load_fails(edited([](FieldMap& fm) {
    RowMatrix C = fm.get_matrix("avg.carry");
    fm.set_matrix("avg.carry", C.topRows(C.rows() - 1));
  })));
}

TEST_MAIN()
