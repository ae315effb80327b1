#pragma once
// The shared fixtures of the Twin Vector Machine tests (test_tvm_*.cpp): the checkerboard
// stream, brute-force references of the twin set's bookkeeping, IDSVM references, snapshots.
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"  // CHECK (run_bookkeeping)

namespace tvm_test {

using namespace budgetkernel;

inline const double inf = std::numeric_limits<double>::infinity();

struct Stream {
  RowMatrix X;
  std::vector<std::int32_t> y;
};

// Noisy 4x4 checkerboard on [-2, 2)^2 (10% flipped); c > 2: the cell index mod c.
inline Stream make_stream(Index n, int n_classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 4.0);
  Stream s{RowMatrix(n, 2), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  for (Index i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    s.X(i, 0) = a - 2.0;
    s.X(i, 1) = b - 2.0;
    int label = (static_cast<int>(a) + static_cast<int>(b)) % n_classes;
    if (u(rng) < 0.4) label = (label + 1) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label;
  }
  return s;
}

inline TVMParams tvm_params(Index budget) {
  TVMParams p;
  p.kernel = Kernel(KernelType::RBF, 1.0);
  p.budget = budget;
  p.C = 1.0;
  return p;
}

// Brute-force partner of twin i under the set's own rule: argmin_j (cost, j).
inline void brute_partner(const detail::TwinSet& tw, Index i, Index& p, double& d) {
  p = -1;
  d = inf;
  for (Index j = 0; j < tw.size(); ++j) {
    if (j == i) continue;
    const double v = tw.pair_distortion(i, j);
    if (v < d) d = v, p = j;
  }
}

// Checks every twin's remembered partner against the brute-force scan; returns mismatches.
inline int check_partners(const detail::TwinSet& tw) {
  int bad = 0;
  for (Index i = 0; i < tw.size(); ++i) {
    Index p = -1;
    double d = inf;
    brute_partner(tw, i, p, d);
    if (p != tw.partner(i) || !(d == tw.partner_distortion(i))) ++bad;
  }
  return bad;
}

// The rule written plainly: +inf across regions (One-Sided), else the input-space d*.
inline double input_rule(const detail::TwinSet& tw, Index i, Index j) {
  if (tw.one_sided() && ((tw.fval(i) >= 0.0) != (tw.fval(j) >= 0.0))) return inf;
  const double si = tw.weight(i), sj = tw.weight(j);
  return si * sj * (tw.points().row(i) - tw.points().row(j)).squaredNorm() / (si + sj);
}

// Feature-space distortion of merging (i, j) into z, from kernel values at z.
inline double feature_distortion(const Kernel& k, const Vector& qi, const Vector& qj, double si, double sj, const Vector& z) {
  const double zz = k.value(z, z);
  return si * (k.value(qi, qi) - 2.0 * k.value(qi, z) + zz) + sj * (k.value(qj, qj) - 2.0 * k.value(qj, z) + zz);
}

// argmin over [lo, hi] of f: dense grid of n points, then golden section around the best.
template <class F>
inline double grid_golden_min(const F& f, double lo, double hi, int n) {
  int best = 0;
  double fb = f(lo);
  for (int g = 1; g <= n; ++g) {
    const double v = f(lo + (hi - lo) * g / n);
    if (v < fb) fb = v, best = g;
  }
  double a = lo + (hi - lo) * std::max(best - 1, 0) / n, b = lo + (hi - lo) * std::min(best + 1, n) / n;
  const double r = 0.5 * (std::sqrt(5.0) - 1.0);
  for (int it = 0; it < 200; ++it) {
    const double x1 = b - r * (b - a), x2 = a + r * (b - a);
    if (f(x1) <= f(x2)) b = x2; else a = x1;
  }
  return 0.5 * (a + b);
}

// The overflow twin's partner against a brute-force scan of the pair rule over the stored twins
// (argmin_j (cost(j, o), j)), and each pair's cost against the rule written plainly: input space
// the closed-form d* (One-Sided: +inf across regions, TVM(x) giving the overflow's region);
// feature space the distortion from kernel values at the pre-image. Returns mismatches.
inline int check_overflow(const detail::TwinSet& tw) {
  const Index o = tw.overflow_slot();
  int bad = 0;
  Index p = -1;
  double d = inf;
  for (Index j = 0; j < tw.size(); ++j) {
    const double v = tw.pair_distortion(j, o);
    if (v < d) d = v, p = j;
    if (tw.merge_space() == TVMMerge::Input) {
      const double r = input_rule(tw, j, o);
      if (!(v == r || std::fabs(v - r) <= 1e-12 * r)) ++bad;
    } else if (v < inf) {
      Vector z(tw.dim());
      tw.merge_point(j, o, z.data());
      const Vector qj = tw.points().row(j).transpose(), qo = tw.points().row(o).transpose();
      const double r = feature_distortion(tw.kernel(), qj, qo, tw.weight(j), tw.weight(o), z);
      if (std::fabs(v - r) > 1e-9 * (1.0 + r)) ++bad;
    } else if (tw.one_sided() && (tw.fval(j) >= 0.0) == (tw.fval(o) >= 0.0)) {
      ++bad;  // +inf only across regions
    }
  }
  if (p != tw.overflow_partner() || !(d == tw.overflow_distortion())) ++bad;
  return bad;
}

// Random twin-set workload: appends, replacements, merges (the overflow twin a candidate) and
// sign flips, checking the bookkeeping after every change set and the overflow twin's partner
// before every merge.
inline void run_bookkeeping(TVMMerge merge, const Kernel& kernel, bool one_sided, Index B, int steps, std::uint64_t seed,
                     int& mismatches, int& rule_mismatches, int* overflow_mismatches = nullptr, int* overflow_merges = nullptr) {
  detail::TwinSet tw;
  const Index d = 3;
  tw.reset(d, B, kernel, merge, one_sided);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<int> coin(0, 99);
  Vector x(d), z(d);
  auto draw = [&] {
    for (Index l = 0; l < d; ++l) x(l) = nd(rng);
  };
  for (int t = 0; t < steps; ++t) {
    draw();
    const double sp = coin(rng) < 50 ? 1.0 : 0.0;
    if (tw.size() < B) {
      tw.set_twin(tw.size(), x.data(), sp, 1.0 - sp);
    } else if (coin(rng) < 30) {  // removal: replace a random slot
      tw.set_twin(coin(rng) % B, x.data(), sp, 1.0 - sp);
    } else {  // merge the best pair of the B + 1 twins, overflow twin into the freed slot
      detail::TwinMerge mg;
      auto never = [](const double*) { return 0.0; };
      tw.set_overflow(x.data(), sp, 1.0 - sp, coin(rng) < 50 ? 0.7 : -0.7);
      if (overflow_mismatches) *overflow_mismatches += check_overflow(tw);
      if (tw.choose_merge(-1.0, 1, never, mg, z.data())) {
        CHECK(mg.overflow == (mg.j == tw.size()));
        const double msp = tw.s_plus(mg.i) + tw.s_plus(mg.j), msm = tw.s_minus(mg.i) + tw.s_minus(mg.j);
        tw.set_twin(mg.i, z.data(), msp, msm);
        if (!mg.overflow) tw.set_twin(mg.j, x.data(), sp, 1.0 - sp);
        if (mg.overflow && overflow_merges) ++*overflow_merges;
      }
      CHECK(!tw.has_overflow());
    }
    // a new "machine": a few sign flips, TVM(q) values for every twin
    for (Index j = 0; j < tw.size(); ++j) {
      const double f = tw.fval(j);
      tw.set_fval(j, coin(rng) < 5 ? -f - 0.1 : (f == 0.0 ? (coin(rng) < 50 ? 0.5 : -0.5) : f * 1.01));
    }
    tw.update_partners();
    mismatches += check_partners(tw);
    if (merge == TVMMerge::Input && t % 7 == 0)
      for (Index i = 0; i < tw.size(); ++i)
        for (Index j = 0; j < tw.size(); ++j) {
          if (i == j) continue;
          const double a = tw.pair_distortion(i, j), b = input_rule(tw, i, j);
          if (!(a == b || std::fabs(a - b) <= 1e-12 * b)) ++rule_mismatches;
        }
  }
}

// IDSVM from scratch on the twins of machine k, at the machine's current C (and the learner's ridge).
inline IncrementalSVM scratch_machine(const TwinVectorMachine& m, Index k) {
  const detail::TwinSet& tw = m.twins(k);
  IncrementalSVM svm(tw.dim(), m.params().kernel, m.machine(k).C(), m.params().ridge);
  for (Index j = 0; j < tw.size(); ++j) {
    const double* q = tw.points().data() + j * tw.dim();
    if (tw.s_plus(j) > 0.0) svm.learn(q, 1.0, tw.s_plus(j));
    if (tw.s_minus(j) > 0.0) svm.learn(q, -1.0, tw.s_minus(j));
  }
  return svm;
}

inline double max_decision_gap(const IncrementalSVM& a, const IncrementalSVM& b, const RowMatrix& P) {
  double gap = 0.0;
  for (Index i = 0; i < P.rows(); ++i) gap = std::max(gap, std::fabs(a.decision(P.row(i).data()) - b.decision(P.row(i).data())));
  return gap;
}

// Whether some example is a free SV (0 < alpha < C s): only then is b unique. With every alpha
// at a bound the optimal b fills an interval and two exact solvers may pick different points.
inline bool has_free_sv(const IncrementalSVM& m) {
  for (Index i = 0; i < m.size(); ++i) {
    const double u = m.C() * m.weight(i);
    if (m.alpha(i) > 1e-9 * u && m.alpha(i) < (1.0 - 1e-9) * u) return true;
  }
  return false;
}

// The machine against an IDSVM from scratch on the same examples: the kernel part
// sum_i y_i alpha_i K(x_i, .) (w of the strictly convex primal, unique) and the dual objective
// always; the full decision values (b included) when b is unique. Returns the largest gap.
inline double machine_gap(const IncrementalSVM& a, const IncrementalSVM& b, const RowMatrix& P) {
  double gap = std::fabs(a.dual_objective() - b.dual_objective()) / (1.0 + std::fabs(b.dual_objective()));
  for (Index i = 0; i < P.rows(); ++i)
    gap = std::max(gap, std::fabs((a.decision(P.row(i).data()) - a.bias()) - (b.decision(P.row(i).data()) - b.bias())));
  if (has_free_sv(a) || has_free_sv(b)) gap = std::max(gap, max_decision_gap(a, b, P));
  return std::max(gap, a.kkt_violation());
}

inline RowMatrix probe_points(Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.5, 2.5);
  RowMatrix P(n, 2);
  for (Index i = 0; i < n; ++i) P(i, 0) = u(rng), P(i, 1) = u(rng);
  return P;
}

inline bool same_bytes(const TwinVectorMachine& a, const TwinVectorMachine& b) {
  FieldMap fa, fb;
  a.save(fa);
  b.save(fb);
  return fa.to_bytes() == fb.to_bytes();
}



// Bookkeeping steps of all machines so far (aims the IncrementalSVM test hook into a step).
inline std::int64_t total_steps(const TwinVectorMachine& m) {
  std::int64_t n = 0;
  for (Index k = 0; k < m.n_outputs(); ++k) n += m.machine(k).n_steps();
  return n;
}

}  // namespace tvm_test
