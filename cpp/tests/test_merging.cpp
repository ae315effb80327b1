// Tests of budget/merging.hpp (BSGD paper 4.3): every reported number is recomputed by brute
// force from the kernel expansions before and after the merge.

// Count Eigen heap allocations made while they are forbidden (works with NDEBUG too); any
// other Eigen assertion still aborts.
#include <cstdio>
#include <cstdlib>
#include <cstring>
namespace bk_test_eigen {
inline int& forbidden_allocations() {
  static int n = 0;
  return n;
}
inline void assertion_failed(const char* what, const char* file, int line) {
  if (std::strstr(what, "heap allocation is forbidden")) {
    ++forbidden_allocations();
    return;
  }
  std::fprintf(stderr, "%s:%d: Eigen assertion failed: %s\n", file, line, what);
  std::abort();
}
}  // namespace bk_test_eigen
#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) ((x) ? static_cast<void>(0) : bk_test_eigen::assertion_failed(#x, __FILE__, __LINE__))

#include "test_oracles.hpp"
#include "test_util.hpp"

#include <budgetkernel/budget/merging.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

using namespace budgetkernel;
using bk_test::merge_reduce;

namespace {

constexpr std::int64_t kMergedId = 1000000;  // id given to m so that z carries it

// ---- brute force -------------------------------------------------------------------------

/// sum_c <w1^(c), w2^(c)> = sum_ij (alpha1_i . alpha2_j) k(x1_i, x2_j).
double cross(const SupportVectors& s1, const SupportVectors& s2, const Kernel& k) {
  double sum = 0.0;
  for (Index i = 0; i < s1.size(); ++i)
    for (Index j = 0; j < s2.size(); ++j)
      sum += s1.alpha(i).dot(s2.alpha(j)) * k.value(s1.x(i).transpose(), s2.x(j).transpose());
  return sum;
}

/// Eq. (21) objective, weights computed here independently of the header.
struct Eq21 {
  double A = 0.0, B = 0.0, s = 0.0;
  int used = 0;
  double operator()(double h) const { return A * std::exp(-s * (1 - h) * (1 - h)) + B * std::exp(-s * h * h); }
};
Eq21 eq21(const Eigen::RowVectorXd& am, const Eigen::RowVectorXd& an, double s) {
  Eq21 e;
  e.s = s;
  for (Index i = 0; i < am.size(); ++i) {
    const double sum = am(i) + an(i);
    if (std::fabs(sum) <= 1e-12 * (std::fabs(am(i)) + std::fabs(an(i)))) continue;
    e.A += am(i) / sum;
    e.B += an(i) / sum;
    ++e.used;
  }
  return e;
}

/// Dense-grid argmax of f over [lo, hi] (200001 points), refined around the best point.
template <class F>
double grid_argmax(const F& f, double lo, double hi) {
  const int n = 200001;
  double best = -1e300, bh = lo;
  for (int i = 0; i < n; ++i) {
    const double h = lo + (hi - lo) * i / (n - 1.0), v = f(h);
    if (v > best) best = v, bh = h;
  }
  const double step = (hi - lo) / (n - 1.0), l2 = bh - 2 * step;
  for (int i = 0; i <= 20000; ++i) {
    const double h = l2 + 4 * step * i / 20000.0, v = f(h);
    if (v > best) best = v, bh = h;
  }
  return bh;
}

/// Exact degradation of merging (m, j) at the header's h, evaluated independently:
/// ||am phi_m + aj phi_j - az phi_z||^2 expanded with k.value on the explicit point z.
double pair_degradation(const SupportVectors& sv, const Kernel& k, Index m, Index j, double* h_out = nullptr) {
  const auto xm = sv.x(m).transpose(), xj = sv.x(j).transpose();
  const double kmj = k.value(xm, xj);
  const double h = detail::merge_h(sv.alpha(m), sv.alpha(j), kmj);
  const Eigen::VectorXd z = h * xm + (1 - h) * xj;
  const double kmz = k.value(xm, z), kjz = k.value(xj, z);
  double d = 0.0;
  for (Index i = 0; i < sv.n_coef(); ++i) {
    const double a = sv.alpha(m)(i), b = sv.alpha(j)(i), az = a * kmz + b * kjz;
    d += a * a + b * b + az * az + 2 * a * b * kmj - 2 * a * az * kmz - 2 * b * az * kjz;
  }
  if (h_out) *h_out = h;
  return d;
}

// The smallest SV; near-ties go to the oldest (smallest id), as the library's rule says.
Index smallest(const SupportVectors& sv) {
  Index m = 0;
  for (Index j = 1; j < sv.size(); ++j) {
    const double v = sv.alpha(j).squaredNorm(), best = sv.alpha(m).squaredNorm();
    const double tol = 1e-9 * std::max(v, best);
    if (v < best - tol || (v <= best + tol && sv.id(j) < sv.id(m))) m = j;
  }
  return m;
}

// ---- random stores -----------------------------------------------------------------------

enum class Coef { Binary, PegasosMulti, DenseMulti };

SupportVectors random_store(std::mt19937_64& rng, Index d, Index B, Index c, Coef kind) {
  std::normal_distribution<double> N(0.0, 1.0);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  SupportVectors sv(d, c, B);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(B));
  for (Index i = 0; i < B; ++i) ids[static_cast<std::size_t>(i)] = i + 1;
  std::shuffle(ids.begin(), ids.end(), rng);
  for (Index i = 0; i < B; ++i) {
    Eigen::VectorXd x(d), a = Eigen::VectorXd::Zero(c);
    for (Index l = 0; l < d; ++l) x(l) = N(rng);
    // Pegasos-like magnitudes: eta_t = 1/(lambda t) after shrinking, spread over decades.
    const double mag = std::exp(-4.0 * U(rng));
    if (kind == Coef::Binary) {
      a(0) = U(rng) < 0.5 ? mag : -mag;
    } else if (kind == Coef::PegasosMulti) {
      // +eta on the true class, -eta on the wrongly predicted one (sometimes rescaled apart).
      const Index y = static_cast<Index>(U(rng) * static_cast<double>(c)) % c;
      const Index r = (y + 1 + static_cast<Index>(U(rng) * static_cast<double>(c - 1)) % (c - 1)) % c;
      a(y) = mag;
      a(r) = -mag * (U(rng) < 0.7 ? 1.0 : 0.3 + 1.4 * U(rng));
    } else {
      for (Index i2 = 0; i2 < c; ++i2) a(i2) = mag * (2 * U(rng) - 1);
    }
    sv.push(x, a, ids[static_cast<std::size_t>(i)]);
  }
  return sv;
}

/// What one checked merge measured.
struct Outcome {
  double h = 0.0, partner_gap = 0.0;  // partner_gap: (D_chosen - D_best) / ||alpha_m||^2
  bool best_partner = false;          // D_chosen <= D_best up to rounding (1e-12 ||alpha_m||^2)
  bool same_index = false;            // n is the brute-force argmin itself
};

/// Runs merge_reduce on `sv` and checks everything against brute force. `grid` enables the
/// (slow) dense-grid check of h.
Outcome check_merge(SupportVectors sv, const Kernel& k, bool grid) {
  Outcome out;
  const Index B = sv.size(), c = sv.n_coef();
  Index m = smallest(sv);
  sv.set_id(m, kMergedId);
  const SupportVectors before = sv;
  Vector work, work2;
  const MaintenanceResult r = merge_reduce(sv, k, work, work2);
  CHECK(sv.size() == B - 1);
  if (sv.size() != B - 1) return out;

  // Which SV disappeared (n) and where z is.
  std::map<std::int64_t, Index> after_row;
  for (Index i = 0; i < sv.size(); ++i) after_row[sv.id(i)] = i;
  Index n = -1;
  for (Index j = 0; j < B; ++j)
    if (!after_row.count(before.id(j))) n = j;
  CHECK(n >= 0 && n != m && after_row.count(kMergedId) == 1);
  if (n < 0 || n == m || !after_row.count(kMergedId)) return out;
  const Index zr = after_row[kMergedId];
  // On a near-tie of ||alpha|| (e.g. alpha_m = -alpha_n) the library's rule takes the older
  // SV as m; relabelling m changed the ids, so let the same rule name the roles.
  if (detail::smaller_or_older(before.alpha(n).squaredNorm(), before.id(n), before.alpha(m).squaredNorm(),
                               before.id(m)))
    std::swap(m, n);
  // The other SVs are untouched.
  for (Index j = 0; j < B; ++j) {
    if (j == m || j == n) continue;
    const Index i = after_row[before.id(j)];
    CHECK((sv.x(i) - before.x(j)).norm() == 0.0 && (sv.alpha(i) - before.alpha(j)).norm() == 0.0);
  }

  // z on the line through x_m, x_n (eq. 20) at the recomputed h.
  const Eigen::VectorXd xm = before.x(m).transpose(), xn = before.x(n).transpose(), z = sv.x(zr).transpose();
  const Eigen::RowVectorXd am = before.alpha(m), an = before.alpha(n);
  const double dist2 = (xm - xn).squaredNorm();
  const double kmn = k.value(xm, xn);
  const double h_ref = detail::merge_h(am, an, kmn);
  const double scale = 1.0 + std::fabs(h_ref);
  if (dist2 > 0) {
    const double h_imp = (z - xn).dot(xm - xn) / dist2;
    CHECK_NEAR(((z - xn) - h_imp * (xm - xn)).norm(), 0.0, 1e-10 * scale);  // collinear
    CHECK_NEAR(h_imp, h_ref, 1e-9 * scale);
    CHECK_NEAR((z - (h_ref * xm + (1 - h_ref) * xn)).norm(), 0.0, 1e-9 * scale);
    out.h = h_imp;
  } else {
    CHECK((z - xm).norm() == 0.0);
    out.h = 1.0;
  }

  // alpha_z from the closed form of eq. (22), with kernel values of the stored z.
  const double kmz = k.value(xm, z), knz = k.value(xn, z);
  for (Index i = 0; i < c; ++i) CHECK_NEAR(sv.alpha(zr)(i), am(i) * kmz + an(i) * knz, 1e-12);

  // Degradation and norm change against the two full kernel expansions.
  const double wb = cross(before, before, k), wa = cross(sv, sv, k), wab = cross(before, sv, k);
  CHECK(std::isfinite(r.degradation) && std::isfinite(r.norm_change));
  CHECK_NEAR(r.degradation, wb + wa - 2 * wab, 1e-10);
  CHECK_NEAR(r.norm_change, wa - wb, 1e-10);

  // h against a dense grid of eq. (21) (binary: identical to maximising alpha_z^2).
  if (grid && dist2 > 0) {
    const Eq21 e = eq21(am, an, k.gamma() * dist2);
    CHECK(e.used > 0);
    const double lo = std::min(0.0, out.h) - 3, hi = std::max(1.0, out.h) + 3;
    CHECK_NEAR(out.h, grid_argmax(e, lo, hi), 1e-4);
  }

  // Partner: brute-force best by exact degradation.
  // (Far-apart candidates all cost ~||alpha_m||^2, i.e. they tie to rounding.)
  double best = 1e300, chosen = 0.0;
  Index argbest = -1;
  for (Index j = 0; j < B; ++j) {
    if (j == m) continue;
    const double dj = pair_degradation(before, k, m, j);
    if (dj < best) best = dj, argbest = j;
    if (j == n) chosen = dj;
  }
  CHECK_NEAR(chosen, r.degradation, 1e-10);
  out.partner_gap = (chosen - best) / am.squaredNorm();
  out.best_partner = chosen <= best + 1e-12 * am.squaredNorm();
  out.same_index = n == argbest;
  return out;
}

struct Stats {
  int runs = 0, best = 0, same = 0, outside = 0;
  double max_gap = 0.0;
  void add(const Outcome& o) {
    ++runs;
    best += o.best_partner;
    same += o.same_index;
    outside += (o.h < 0.0 || o.h > 1.0);
    max_gap = std::max(max_gap, o.partner_gap);
  }
};

Stats run_random(Coef kind, Index c, int stores, int grid_stores, std::uint64_t seed, Index bmin = 5, Index bmax = 30) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  Stats st;
  for (int t = 0; t < stores; ++t) {
    const Index d = 2 + t % 4;
    const Index B = bmin + static_cast<Index>(U(rng) * static_cast<double>(bmax - bmin + 1));
    const Kernel k(KernelType::RBF, std::exp(std::log(0.1) + U(rng) * std::log(30.0)));  // gamma in [0.1, 3]
    st.add(check_merge(random_store(rng, d, B, c, kind), k, t < grid_stores));
  }
  return st;
}

SupportVectors store_of(const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& as) {
  const Index d = static_cast<Index>(xs[0].size()), c = static_cast<Index>(as[0].size());
  SupportVectors sv(d, c, static_cast<Index>(xs.size()));
  for (std::size_t i = 0; i < xs.size(); ++i)
    sv.push(Eigen::Map<const Eigen::VectorXd>(xs[i].data(), d), Eigen::Map<const Eigen::VectorXd>(as[i].data(), c),
            static_cast<std::int64_t>(i + 1));
  return sv;
}

}  // namespace

// ---- tests ------------------------------------------------------------------------------------

TEST_CASE("merge: optimal h matches a dense grid of eq. (21), all sign cases") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst = 0.0;
  for (int t = 0; t < 400; ++t) {
    const Index c = 1 + t % 4;
    Eigen::RowVectorXd am(c), an(c);
    for (Index i = 0; i < c; ++i) am(i) = 2 * U(rng) - 1, an(i) = 2 * U(rng) - 1;
    const double s = std::exp(-5 + 9 * U(rng));  // k from 1 - 7e-3 to 1e-35
    const double h = detail::merge_h(am, an, std::exp(-s));
    const Eq21 e = eq21(am, an, s);
    if (e.used == 0) continue;
    const double lo = std::min(0.0, h) - 3, hi = std::max(1.0, h) + 3;
    const double hg = grid_argmax(e, lo, hi);
    CHECK_NEAR(h, hg, 1e-4);
    worst = std::max(worst, std::fabs(h - hg));
    // The stationarity condition holds to full precision: g'(h) = 0.
    const double gp = 2 * s * (e.A * (1 - h) * std::exp(-s * (1 - h) * (1 - h)) - e.B * h * std::exp(-s * h * h));
    CHECK_NEAR(gp / (std::fabs(e.A) + std::fabs(e.B)), 0.0, 1e-12);
  }
  std::printf("  worst |h - grid argmax| = %.2g\n", worst);
}

TEST_CASE("merge: binary h to 1e-13 relative against a long-double root of eq. (21)") {
  // The root of g'(h) = 0 by bisection in long double (in u = logit h for A, B > 0; in
  // w = ln(1 + 1/t) beyond an end, h = 1 + t or -t), for a = alpha_m/alpha_n over many scales:
  // tiny |a| (the typical BSGD merge, where merge_chebyshev settles it without a solve), |a|
  // near 1, and s from 1e-8 to 2 (the unimodal range).
  using LD = long double;
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst_in = 0.0, worst_out = 0.0;
  for (int t = 0; t < 20000; ++t) {
    const double mag = t % 3 == 0 ? 1.0 - std::exp(-30.0 * U(rng)) : std::exp(-14.0 * U(rng));
    const double a = (t % 2 ? 1.0 : -1.0) * mag, s = std::exp(std::log(1e-8) + (std::log(2.0) - std::log(1e-8)) * U(rng));
    Eigen::RowVectorXd am(1), an(1);
    am(0) = a, an(0) = 1.0;
    const double h = detail::merge_h_s(am, an, s);
    if (a > 0.0) {  // root of c - u + s tanh(u/2), c = ln a
      const LD c = std::log(static_cast<LD>(a));
      LD lo = c - s, hi = c + s;
      for (int i = 0; i < 200; ++i) {
        const LD mid = (lo + hi) / 2;
        (c - mid + s * std::tanh(mid / 2) > 0 ? lo : hi) = mid;
      }
      const LD href = 1 / (1 + std::exp(-(lo + hi) / 2));
      worst_in = std::max(worst_in, static_cast<double>(std::fabs((h - href) / href)));
    } else {  // h = -t, t = 1/expm1(w), w the root of -l - w + s coth(w/2), l = ln|a|
      const LD l = std::log(static_cast<LD>(-a));
      LD lo = s - l, hi = s - l + 2 * s / (s - l);
      for (int i = 0; i < 200; ++i) {
        const LD mid = (lo + hi) / 2;
        (-l - mid + s / std::tanh(mid / 2) > 0 ? lo : hi) = mid;
      }
      const LD tref = 1 / std::expm1((lo + hi) / 2);
      worst_out = std::max(worst_out, static_cast<double>(std::fabs((-h - tref) / tref)));
    }
  }
  std::printf("  max relative error of h: %.2g (0 < h < 1), of t = -h: %.2g (h < 0)\n", worst_in, worst_out);
  CHECK(worst_in <= 2e-13);
  CHECK(worst_out <= 2e-13);
}

TEST_CASE("scalar fast_exp / fast_expm1 against std::exp / std::expm1, edges included") {
  auto ulps = [](double x, double ref) {
    if (x == ref) return 0.0;
    const double spacing = std::nextafter(std::fabs(ref), std::numeric_limits<double>::infinity()) - std::fabs(ref);
    return std::fabs(x - ref) / spacing;
  };
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst_e = 0.0, worst_m = 0.0;
  for (int t = 0; t < 2000000; ++t) {
    double x = 0.0;
    switch (t % 4) {
      case 0: x = -746.0 + 1460.0 * U(rng); break;                             // the whole range, slow paths included
      case 1: x = -2.0 + 4.0 * U(rng); break;                                  // around the expm1 cancellation
      case 2: x = (U(rng) < 0.5 ? -1 : 1) * std::exp(-40.0 * U(rng)); break;   // small
      default: x = (U(rng) < 0.5 ? -1 : 1) * std::exp(-700.0 * U(rng)); break; // tiny
    }
    double e = 0.0, em1 = 0.0;
    detail::fast_exp_expm1(x, e, em1);
    CHECK(e == detail::fast_exp(x) && em1 == detail::fast_expm1(x));
    worst_e = std::max(worst_e, ulps(e, std::exp(x)));
    worst_m = std::max(worst_m, ulps(em1, std::expm1(x)));
  }
  std::printf("  max error: fast_exp %.2f ulp, fast_expm1 %.2f ulp\n", worst_e, worst_m);
  CHECK(worst_e <= 1.0);
  CHECK(worst_m <= 2.0);
  const double inf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, -0.0, -708.0, 709.0, -708.0000001, 709.0000001, -745.0, -746.0, 710.0, -inf, inf}) {
    CHECK(ulps(detail::fast_exp(x), std::exp(x)) <= 1.0);
    CHECK(ulps(detail::fast_expm1(x), std::expm1(x)) <= 2.0);
  }
  CHECK(detail::fast_exp(0.0) == 1.0 && detail::fast_expm1(0.0) == 0.0);
  CHECK(std::isnan(detail::fast_exp(std::nan(""))) && std::isnan(detail::fast_expm1(std::nan(""))));
}

TEST_CASE("merge: degradation formula equals the brute-force residual at any h") {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const Kernel k(KernelType::RBF, 0.7);
  for (int t = 0; t < 200; ++t) {
    const Index c = 1 + t % 3;
    Eigen::VectorXd xm(3), xn(3);
    for (Index l = 0; l < 3; ++l) xm(l) = 2 * U(rng) - 1, xn(l) = 2 * U(rng) - 1;
    Eigen::RowVectorXd am(c), an(c);
    for (Index i = 0; i < c; ++i) am(i) = 2 * U(rng) - 1, an(i) = 2 * U(rng) - 1;
    const double h = -3 + 7 * U(rng), kmn = k.value(xm, xn);
    const Eigen::VectorXd z = h * xm + (1 - h) * xn;
    double brute = 0;
    for (Index i = 0; i < c; ++i) {
      const double az = am(i) * k.value(xm, z) + an(i) * k.value(xn, z);
      brute += am(i) * am(i) + an(i) * an(i) + 2 * am(i) * an(i) * kmn - az * az;
    }
    CHECK_NEAR(detail::merge_degradation(am, an, kmn, h), brute, 1e-12);
  }
}

TEST_CASE("merge: random binary stores (table-ranked partner)") {
  const Stats st = run_random(Coef::Binary, 1, 1500, 150, 21);
  std::printf("  binary B=5..30: %d stores, table-chosen partner is the best in %d (same index %d), "
              "max gap %.3g alpha_m^2, h outside [0,1] in %d\n",
              st.runs, st.best, st.same, st.max_gap, st.outside);
  CHECK(st.max_gap <= 1e-4);  // measured worst 2.6e-5 over 60000 stores
  CHECK(st.outside > 0);
}

TEST_CASE("merge: binary partner ranking on large stores") {
  const Stats st = run_random(Coef::Binary, 1, 300, 0, 22, 100, 300);
  std::printf("  binary B=100..300: %d stores, best partner in %d (same index %d), max gap %.3g alpha_m^2\n", st.runs,
              st.best, st.same, st.max_gap);
  CHECK(st.max_gap <= 1e-4);  // measured worst 2.6e-5 over 60000 stores
}

TEST_CASE("merge: random multi-class stores (Pegasos-like coefficients, c = 3, 4, 10, 26)") {
  // With 10 and 26 classes the partner search prunes with its bound (merge_partner_multi);
  // fewer stores there, each merge dearer to check.
  for (Index c : {3, 4, 10, 26}) {
    const bool many = c > 4;
    const Stats st = run_random(Coef::PegasosMulti, c, many ? 200 : 400, many ? 60 : 120,
                                (many ? 99 : 30) + static_cast<std::uint64_t>(c));
    std::printf("  pegasos-like c=%d: %d stores, brute-force best partner in %d (same index %d, the rest "
                "rounding ties), max gap %.2g alpha_m^2, h outside [0,1] in %d\n",
                static_cast<int>(c), st.runs, st.best, st.same, st.max_gap, st.outside);
    CHECK(st.best == st.runs);
    CHECK(st.outside > 0);
  }
}

TEST_CASE("merge: many classes (c = 10, 26): the bound-pruned partner search == the exhaustive one") {
  // merge_partner (merge_partner_multi) skips a candidate whose lower bound (the class vectors'
  // rank-1 error) exceeds the best degradation found; the oracle solves h for every candidate.
  // Every fourth store has exact duplicates (equal points and coefficients: tied degradations,
  // which must go to the lowest index as in the oracle).
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  int pruned_runs = 0;
  for (Index c : {10, 26})
    for (Coef coef : {Coef::PegasosMulti, Coef::DenseMulti})
      for (int t = 0; t < 100; ++t) {
        const Index B = 20 + t % 80, d = 2 + t % 5;
        SupportVectors sv = random_store(rng, d, B, c, coef);
        if (t % 4 == 0)
          for (Index i = 2; i < B; i += 5) {
            sv.set_x(i, sv.x(i - 1).transpose());
            sv.alpha(i) = sv.alpha(i - 1);
          }
        const Kernel k(KernelType::RBF, std::exp(std::log(0.1) + U(rng) * std::log(30.0)));
        const Index m = smallest(sv);
        Vector krow(B);
        sv.kernel_row(k, sv.x(m).transpose(), sv.sqnorm()(m), krow);
        krow(m) = 1.0;
        Index want = -1;
        double best = std::numeric_limits<double>::infinity();
        for (Index j = 0; j < B; ++j) {
          if (j == m) continue;
          const double s = detail::merge_s_from_k(krow(j));
          const double h = detail::merge_h_s(sv.alpha(m), sv.alpha(j), s);
          const double e = detail::merge_degradation_s(sv.alpha(m), sv.alpha(j), s, h);
          if (want < 0 || e < best) best = e, want = j;
        }
        CHECK(detail::merge_partner_scan(sv, m, krow.data()) == want);
        CHECK(detail::merge_partner(sv, m, krow.data()) == want);
        const Vector norms = sv.A().topRows(B).rowwise().squaredNorm();
        CHECK(detail::merge_partner(sv, m, krow.data(), norms.data()) == want);
        ++pruned_runs;
      }
  CHECK(pruned_runs == 400);
}

TEST_CASE("merge: random multi-class stores (dense mixed-sign coefficients)") {
  const Stats st = run_random(Coef::DenseMulti, 3, 300, 60, 40);
  std::printf("  dense c=3: %d stores, best partner in %d (same index %d), max gap %.2g alpha_m^2\n", st.runs, st.best,
              st.same, st.max_gap);
  CHECK(st.best == st.runs);
}

TEST_CASE("merge: binary table error against the exact per-unit degradation") {
  const detail::MergeTable& table = detail::merge_table();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst = 0.0;
  for (int t = 0; t < 200000; ++t) {
    const double r = 2 * U(rng) - 1;
    double k = U(rng);
    if (t % 4 == 1) k = std::pow(U(rng), 8);
    if (t % 4 == 2) k = 1 - std::pow(U(rng), 8);
    worst = std::max(worst, std::fabs(table.per_unit(r, k) - detail::MergeTable::exact(r, k)));
  }
  std::printf("  %dx%d table: max |E_table - E_exact| = %.3g (per unit alpha_m^2)\n",
              static_cast<int>(detail::MergeTable::kR), static_cast<int>(detail::MergeTable::kK), worst);
  CHECK(worst <= 4e-4);
  // E = D / r^2 and its r -> 0 limit.
  for (double k : {0.05, 0.3, 0.8, 0.99}) {
    double h = 0;
    const double e = detail::MergeTable::exact(0.25, k, &h);
    Eigen::RowVectorXd am(1), an(1);
    am << 0.25;
    an << 1.0;
    CHECK_NEAR(e * 0.0625, detail::merge_degradation(am, an, k, h), 1e-14);
    CHECK_NEAR(detail::MergeTable::exact(0.0, k), detail::MergeTable::exact(1e-5, k), 1e-5);
  }
}

TEST_CASE("merge: opposite-sign binary pair has h outside [0, 1], exact degradation") {
  const Kernel k(KernelType::RBF, 1.0);
  // m = row 0 (alpha 0.3) and m = last row: the slot handling differs.
  for (bool m_last : {false, true}) {
    auto sv = m_last ? store_of({{0.5, 0.0}, {0.0, 0.0}}, {{-1.0}, {0.3}}) : store_of({{0.0, 0.0}, {0.5, 0.0}}, {{0.3}, {-1.0}});
    const Outcome o = check_merge(sv, k, true);
    CHECK(o.h < 0.0);  // beyond x_n, the larger coefficient
  }
  // Three SVs, opposite signs, m in the middle and last.
  check_merge(store_of({{0.0, 0.0}, {0.4, 0.1}, {-1.0, 2.0}}, {{0.8}, {-0.2}, {1.5}}), k, true);
  check_merge(store_of({{0.0, 0.0}, {-1.0, 2.0}, {0.4, 0.1}}, {{0.8}, {1.5}, {-0.2}}), k, true);
}

TEST_CASE("merge: alpha_m + alpha_n = 0 (eq. 21 degenerate): alpha_z^2 maximised directly") {
  const Kernel k(KernelType::RBF, 1.0);
  for (double dx : {0.05, 0.5, 2.0}) {
    SupportVectors sv = store_of({{0.0, 0.0}, {dx, 0.0}, {5.0, 5.0}}, {{0.5}, {-0.5}, {2.0}});
    const Outcome o = check_merge(sv, k, false);
    // Grid over the squared coefficient (symmetric: both mirror optima are fine).
    const double s = dx * dx;
    const double az = std::fabs(std::exp(-s * (1 - o.h) * (1 - o.h)) - std::exp(-s * o.h * o.h));
    const double W = 3.0 / std::sqrt(s) + 3.0;
    const double hg = grid_argmax([&](double h) { return std::fabs(std::exp(-s * (1 - h) * (1 - h)) - std::exp(-s * h * h)); }, -W, 1 + W);
    CHECK_NEAR(az, std::fabs(std::exp(-s * (1 - hg) * (1 - hg)) - std::exp(-s * hg * hg)), 1e-12);
    CHECK(o.h > 1.0 || o.h < 0.0);
  }
  // Multi-class with every class degenerate: alpha_n = -alpha_m.
  SupportVectors sv = store_of({{0.0, 0.0}, {0.3, 0.2}, {4.0, 4.0}}, {{0.5, -0.5, 0.0}, {-0.5, 0.5, 0.0}, {1.0, 0.0, -1.0}});
  const Outcome o = check_merge(sv, k, false);
  const double s = 0.13;
  const double W = 3.0 / std::sqrt(s) + 3.0;
  auto q = [&](double h) { return std::fabs(std::exp(-s * (1 - h) * (1 - h)) - std::exp(-s * h * h)); };
  CHECK_NEAR(q(o.h), q(grid_argmax(q, -W, 1 + W)), 1e-12);
}

TEST_CASE("merge: duplicate points (k_mn = 1)") {
  const Kernel k(KernelType::RBF, 2.0);
  for (double an : {0.7, -0.7, -0.2}) {
    SupportVectors sv = store_of({{0.3, -0.1}, {1.0, 1.0}, {0.3, -0.1}}, {{0.2}, {1.5}, {an}});
    // m = 0 (0.2, or -0.2 at index 2 when an = -0.2: then the duplicate partner is index 0).
    Vector w1, w2;
    SupportVectors before = sv;
    const Index m = smallest(sv);
    const Index n = m == 0 ? 2 : 0;
    const MaintenanceResult r = merge_reduce(sv, k, w1, w2);
    CHECK(sv.size() == 2);
    CHECK_NEAR(r.degradation, 0.0, 1e-15);
    CHECK(std::isfinite(r.norm_change));
    CHECK_NEAR(r.norm_change, cross(sv, sv, k) - cross(before, before, k), 1e-12);
    bool found = false;
    for (Index i = 0; i < sv.size(); ++i)
      if ((sv.x(i) - before.x(m)).norm() == 0.0) {
        found = true;
        CHECK_NEAR(sv.alpha(i)(0), before.alpha(m)(0) + before.alpha(n)(0), 1e-15);
      }
    CHECK(found);
  }
  // Multi-class duplicates, including a cancelling pair.
  check_merge(store_of({{1.0, 2.0}, {1.0, 2.0}, {0.0, 0.0}}, {{0.1, -0.1, 0.0}, {0.0, 0.4, -0.4}, {2.0, 0.0, -2.0}}), k, false);
  check_merge(store_of({{1.0, 2.0}, {1.0, 2.0}, {0.0, 0.0}}, {{0.1, -0.1, 0.0}, {-0.1, 0.1, 0.0}, {2.0, 0.0, -2.0}}), k, false);
}

TEST_CASE("merge: far points (k_mn ~ 0) and the bimodal regime") {
  const Kernel k(KernelType::RBF, 1.0);
  // k_mn underflows to 0: merging = removing m (z = x_n, alpha_z = alpha_n).
  {
    SupportVectors sv = store_of({{0.0, 0.0}, {100.0, 0.0}}, {{0.3}, {-0.9}});
    SupportVectors before = sv;
    Vector w1, w2;
    const MaintenanceResult r = merge_reduce(sv, k, w1, w2);
    CHECK(sv.size() == 1);
    CHECK_NEAR((sv.x(0) - before.x(1)).norm(), 0.0, 1e-12);  // z = x_n (h = 0 to 1e-15)
    CHECK_NEAR(sv.alpha(0)(0), -0.9, 0.0);
    CHECK_NEAR(r.degradation, 0.09, 1e-15);
    CHECK_NEAR(r.norm_change, -0.09, 1e-15);
  }
  check_merge(store_of({{0.0, 0.0}, {40.0, 0.0}, {0.0, 45.0}}, {{0.1, -0.1, 0.0}, {0.0, 0.5, -0.5}, {0.0, 1.0, -1.0}}), k, false);
  // k_mn = e^-20: g bimodal in h (modes near 0 and near 1); same and opposite signs.
  const double dx = std::sqrt(20.0);
  for (double an : {0.35, 0.5, -0.35, 1.0})
    check_merge(store_of({{0.0, 0.0}, {dx, 0.0}}, {{0.3}, {an}}), k, true);
  check_merge(store_of({{0.0, 0.0}, {dx, 0.0}}, {{0.3, -0.3, 0.0}, {0.0, 0.35, -0.35}}), k, true);
}

TEST_CASE("merge: all-zero smallest SV is erased") {
  const Kernel k(KernelType::RBF, 1.0);
  SupportVectors sv = store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}, {{1.0}, {0.0}, {-2.0}});
  Vector w1, w2;
  const MaintenanceResult r = merge_reduce(sv, k, w1, w2);
  CHECK(sv.size() == 2);
  CHECK(r.degradation == 0.0 && r.norm_change == 0.0);
  CHECK(sv.alpha(1)(0) == -2.0);
}

TEST_CASE("merge partner search with all-zero coefficients (NaN ratios) stays defined") {
  // Merging erases a zero SV instead, so no learner gets here; the search itself must still not
  // cast a NaN table coordinate to an index (UBSan: float-cast-overflow; an INT64_MIN index).
  SupportVectors sv = store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}, {{0.0}, {0.0}, {0.0}});
  Vector krow(sv.size());
  sv.kernel_row(Kernel(KernelType::RBF, 1.0), sv.x(0).transpose(), sv.sqnorm()(0), krow);
  const Index p = detail::merge_partner(sv, 0, krow.data());
  CHECK(p == 1 || p == 2);
}

TEST_CASE("multi-class partner search with overflowing degradations: the scan's choice, never m") {
  // Coefficients near 1e200 of disjoint classes square past the double range: every
  // degradation is +inf (so the best is), every bound inf or NaN. The pruned search must still
  // return the exhaustive scan's partner (the first candidate), and never m itself.
  for (Index m : {0, 2}) {
    SupportVectors sv = store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}},
                                 {{1e200, 0.0, 0.0}, {0.0, 2e200, 0.0}, {0.0, 0.0, 1.5e200}, {0.0, 4e200, 0.0}});
    Vector krow(sv.size());
    sv.kernel_row(Kernel(KernelType::RBF, 1.0), sv.x(m).transpose(), sv.sqnorm()(m), krow);
    krow(m) = 1.0;
    CHECK(std::isinf(detail::merge_candidate(sv.A(), m, m == 0 ? 1 : 0, krow(m == 0 ? 1 : 0))));
    const Index p = detail::merge_partner(sv, m, krow.data());
    CHECK(p != m);
    CHECK(p == detail::merge_partner_scan(sv, m, krow.data()));
  }
}

TEST_CASE("merge: non-RBF kernel and a store of fewer than 2 SVs throw") {
  SupportVectors sv = store_of({{0.0, 0.0}, {1.0, 0.0}}, {{1.0}, {-2.0}});
  Vector w1, w2;
  CHECK_THROWS(merge_reduce(sv, Kernel(KernelType::Linear), w1, w2));
  CHECK_THROWS(merge_reduce(sv, Kernel(KernelType::Polynomial, 1.0, 2, 1.0), w1, w2));
  CHECK(sv.size() == 2);
  SupportVectors one = store_of({{0.0, 0.0}}, {{1.0}});
  CHECK_THROWS(merge_reduce(one, Kernel(KernelType::RBF, 1.0), w1, w2));
}

TEST_CASE("merge: no heap allocation once the work vectors are large enough") {
  for (Index c : {1, 3}) {
    std::mt19937_64 rng(50);
    SupportVectors sv = random_store(rng, 4, 60, c, c == 1 ? Coef::Binary : Coef::PegasosMulti);
    Vector w1(60), w2(60);
    (void)detail::merge_table();  // built once, outside the hot path
    const int before = bk_test_eigen::forbidden_allocations();
    Eigen::internal::set_is_malloc_allowed(false);
    for (int i = 0; i < 20; ++i) merge_reduce(sv, Kernel(KernelType::RBF, 0.5), w1, w2);
    Eigen::internal::set_is_malloc_allowed(true);
    CHECK(bk_test_eigen::forbidden_allocations() == before);
    CHECK(sv.size() == 40);
  }
}

TEST_CASE("argmin_oldest == a scan with smaller_or_older's tie rule (unique minima, near-ties, signs, NaN)") {
  std::mt19937_64 rng(44);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  int unique = 0, tied = 0;
  for (int t = 0; t < 20000; ++t) {
    const Index n = 1 + static_cast<Index>(U(rng) * 120);
    std::vector<double> v(static_cast<std::size_t>(n));
    std::vector<std::int64_t> id(static_cast<std::size_t>(n));
    for (Index j = 0; j < n; ++j) {
      // A few levels (Pegasos' equal |alpha|), some nudged by ~1e-12 (near-ties) or 1e-8 (not).
      double x = 0.25 * static_cast<double>(1 + static_cast<int>(U(rng) * 4));
      if (t % 3 == 0) x = U(rng);
      if (U(rng) < 0.2) x *= 1.0 + (U(rng) < 0.5 ? 1e-12 : 1e-8);
      if (t % 5 == 1 && U(rng) < 0.5) x = -x;  // the tolerance takes |v|
      v[static_cast<std::size_t>(j)] = x;
      id[static_cast<std::size_t>(j)] = static_cast<std::int64_t>(U(rng) * 1e6);
    }
    if (t % 97 == 0) v[static_cast<std::size_t>(U(rng) * n)] = std::numeric_limits<double>::quiet_NaN();
    const double vmin = Eigen::Map<const Vector>(v.data(), n).minCoeff();
    Index ref = -1, ties = 0;
    for (Index j = 0; j < n; ++j) {
      const double vj = v[static_cast<std::size_t>(j)];
      if (vj > vmin + 1e-9 * std::max(std::abs(vj), std::abs(vmin))) continue;
      ++ties;
      if (ref < 0 || id[static_cast<std::size_t>(j)] < id[static_cast<std::size_t>(ref)]) ref = j;
    }
    ++(ties == 1 ? unique : tied);
    CHECK(detail::argmin_oldest(v.data(), id.data(), n) == ref);
  }
  std::printf("  20000 arrays: %d with a unique minimum, %d with near-ties\n", unique, tied);
  CHECK(unique > 1000 && tied > 1000);
}

// ---- the cached path: Merging (GramCache) against merge_reduce -----------------------------

namespace {

using bk_test::brute_rows;

bool cache_bitwise_rebuilt(const GramCache& g, const SupportVectors& sv, const Kernel& k) {
  GramCache fresh;
  fresh.rebuild(sv, k);
  if (fresh.size() != g.size()) return false;
  for (Index i = 0; i < g.size(); ++i)
    for (Index j = 0; j < g.size(); ++j)
      if (!(g(i, j) == fresh(i, j))) return false;
  return true;
}

struct CachedStats {
  int merges = 0, same_slots = 0, bitwise_store = 0, cache_bitwise = 0;
  int held_merged = 0, held_moved = 0;  // merges after a push: the pushed SV merged away / kept
  int untracked_bitwise = 0;             // Merging without norm tracking: the same store, bit for bit
  double max_dx = 0.0, max_da = 0.0, max_ddeg = 0.0, max_norm_err = 0.0, max_deg_err = 0.0, max_cache_err = 0.0;
};

/// Stores of B = 5..bmax SVs: rebuild a Merging on a copy, then 5 rounds of (both reduce; compare;
/// resynchronise the reference store to the cached one; push one new SV to both, the cached side
/// through on_push with the row a learner would have computed).
CachedStats run_cached(Coef kind, Index c, int stores, std::uint64_t seed, Index bmax) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  CachedStats st;
  Vector w1, w2, krow;
  for (int t = 0; t < stores; ++t) {
    const Index d = 2 + t % 4;
    const Index B = 5 + static_cast<Index>(U(rng) * static_cast<double>(bmax - 4));
    const Kernel k(KernelType::RBF, std::exp(std::log(0.1) + U(rng) * std::log(30.0)));
    SupportVectors ref = random_store(rng, d, B, c, kind);
    SupportVectors sv = ref;
    Merging mg(k);
    mg.rebuild(sv, k);
    SupportVectors sv_u = ref;  // the same steps without norm tracking (no cache, no f values)
    Merging mu(k);
    mu.track_norm(false, sv_u);
    Eigen::VectorXd pushed;
    for (int round = 0; round < 5; ++round) {
      const SupportVectors before = sv;
      const MaintenanceResult r1 = merge_reduce(ref, k, w1, w2);
      const MaintenanceResult r2 = mg.reduce(sv, k);
      const MaintenanceResult r3 = mu.reduce(sv_u, k);
      ++st.merges;
      {
        const Index n = sv.size();
        bool same = sv_u.size() == n && r3.degradation == r2.degradation && !r3.norm_exact &&
                    std::isnan(r3.norm_change) && r2.norm_exact;
        for (Index i = 0; same && i < n; ++i)
          same = sv_u.id(i) == sv.id(i) && (sv_u.x(i).array() == sv.x(i).array()).all() &&
                 (sv_u.alpha(i).array() == sv.alpha(i).array()).all();
        st.untracked_bitwise += same;
      }
      if (round > 0) {  // Merging held the pushed SV's row back: both ways of writing it
        bool kept = false;
        for (Index i = 0; i < sv.size() && !kept; ++i) kept = sv.x(i).transpose() == pushed;
        ++(kept ? st.held_moved : st.held_merged);
      }
      bool slots = ref.size() == sv.size();
      for (Index i = 0; slots && i < sv.size(); ++i) slots = ref.id(i) == sv.id(i);
      st.same_slots += slots;
      CHECK(slots);
      if (!slots) break;
      const Index n = sv.size();
      const double dx = (ref.X().topRows(n) - sv.X().topRows(n)).cwiseAbs().maxCoeff();
      const double da = (ref.A().topRows(n) - sv.A().topRows(n)).cwiseAbs().maxCoeff();
      st.bitwise_store += dx == 0.0 && da == 0.0 && r1.degradation == r2.degradation;
      st.max_dx = std::max(st.max_dx, dx);
      st.max_da = std::max(st.max_da, da);
      st.max_ddeg = std::max(st.max_ddeg, std::fabs(r1.degradation - r2.degradation));
      const double wb = cross(before, before, k), wa = cross(sv, sv, k), wab = cross(before, sv, k);
      st.max_norm_err = std::max(st.max_norm_err, std::fabs(r2.norm_change - (wa - wb)));
      st.max_deg_err = std::max(st.max_deg_err, std::fabs(r2.degradation - (wb + wa - 2 * wab)));
      const RowMatrix K = brute_rows(sv, k);
      CHECK(mg.gram().size() == n);
      for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j) st.max_cache_err = std::max(st.max_cache_err, std::fabs(mg.gram()(i, j) - K(i, j)));
      st.cache_bitwise += cache_bitwise_rebuilt(mg.gram(), sv, k);
      // The reference continues from the cached path's store; one new SV for both.
      ref = sv;
      Eigen::VectorXd x(d), a = Eigen::VectorXd::Zero(c);
      for (Index l = 0; l < d; ++l) x(l) = 2 * U(rng) - 1;
      for (Index i = 0; i < c; ++i) a(i) = (2 * U(rng) - 1) * std::exp(-3 * U(rng));
      if (krow.size() < n + 1) krow.resize(n + 1);
      pushed = x;
      sv.push(x, a, kMergedId + 1 + 10 * t + round);
      ref.push(x, a, kMergedId + 1 + 10 * t + round);
      sv_u = sv;
      // The learner's row, with the query's |x|^2 equal to the store's (GramCache's premise for
      // a bitwise rebuild; a separately computed squaredNorm may differ in the last bit when
      // GCC fuses multiply-adds differently in another inlining context, -ffp-contract=fast).
      k.row(sv.X(), sv.sqnorm(), n, sv.x(n).transpose(), sv.sqnorm()(n), krow);
      mg.on_push(sv, krow, 1.0);
      mu.on_push(sv_u, krow, 1.0);
    }
  }
  return st;
}

}  // namespace

TEST_CASE("Merging (cached) == merge_reduce: same partner, slots, h, z, alpha_z, degradation") {
  struct Case {
    const char* name;
    Coef kind;
    Index c;
    int stores;
    Index bmax;
  };
  const Case cases[] = {{"binary", Coef::Binary, 1, 300, 120},
                        {"pegasos-like c=3", Coef::PegasosMulti, 3, 150, 50},
                        {"dense c=3", Coef::DenseMulti, 3, 100, 50}};
  std::uint64_t seed = 60;
  for (const Case& cs : cases) {
    const CachedStats st = run_cached(cs.kind, cs.c, cs.stores, seed++, cs.bmax);
    std::printf("  %-16s %d merges: same partner and slots %d, bitwise-identical result %d; max |dz| %.2g, "
                "max |d alpha| %.2g, max |d degradation| %.2g; vs brute force: norm_change %.2g, degradation %.2g; "
                "cache vs brute-force rows %.2g, == rebuild bitwise %d/%d; after a push, the new SV merged in %d, "
                "kept in %d; without norm tracking bitwise the same %d\n",
                cs.name, st.merges, st.same_slots, st.bitwise_store, st.max_dx, st.max_da, st.max_ddeg, st.max_norm_err,
                st.max_deg_err, st.max_cache_err, st.cache_bitwise, st.merges, st.held_merged, st.held_moved,
                st.untracked_bitwise);
    CHECK(st.held_merged > 0 && st.held_moved > 0);
    CHECK(st.same_slots == st.merges);
    CHECK(st.max_dx <= 1e-12 && st.max_da <= 1e-12 && st.max_ddeg <= 1e-12);
    CHECK(st.max_norm_err <= 1e-10 && st.max_deg_err <= 1e-10);
    CHECK(st.max_cache_err <= 1e-15);
    CHECK(st.cache_bitwise == st.merges);
    CHECK(st.untracked_bitwise == st.merges);
  }
}

TEST_CASE("Merging (cached): special stores (m last, duplicates, far points, zero alpha) and errors") {
  const Kernel k(KernelType::RBF, 1.0);
  // held: the last SV arrives through on_push (its row held back until reduce), as in a learner.
  // track = false: without norm tracking (no cache; norm_change not reported).
  auto check = [&](SupportVectors sv, bool held, bool track) {
    SupportVectors ref = sv;
    Merging mg(k);
    mg.track_norm(track, sv);
    if (held) {
      SupportVectors earlier = sv;
      const Index last = sv.size() - 1;
      earlier.erase(last);
      mg.rebuild(earlier, k);
      Vector krow(sv.size());
      k.row(sv.X(), sv.sqnorm(), last, sv.x(last).transpose(), sv.sqnorm()(last), krow);
      mg.on_push(sv, krow, 1.0);
    } else {
      mg.rebuild(sv, k);
    }
    Vector w1, w2;
    const SupportVectors before = sv;
    const MaintenanceResult r1 = merge_reduce(ref, k, w1, w2), r2 = mg.reduce(sv, k);
    CHECK(ref.size() == sv.size());
    for (Index i = 0; i < sv.size(); ++i) {
      CHECK(ref.id(i) == sv.id(i));
      CHECK((ref.x(i) - sv.x(i)).norm() <= 1e-14 && (ref.alpha(i) - sv.alpha(i)).norm() <= 1e-14);
    }
    CHECK_NEAR(r1.degradation, r2.degradation, 1e-14);
    if (track) {
      CHECK(mg.gram().size() == sv.size());
      CHECK(r2.norm_exact);
      CHECK_NEAR(r2.norm_change, cross(sv, sv, k) - cross(before, before, k), 1e-12);
      CHECK(cache_bitwise_rebuilt(mg.gram(), sv, k));
    } else {
      CHECK_THROWS(mg.gram());
      // Only the erase of a zero SV still reports its (zero) norm change.
      CHECK(r2.norm_exact ? r2.norm_change == 0.0 : std::isnan(r2.norm_change));
    }
  };
  auto both = [&](const SupportVectors& sv) {
    for (bool track : {true, false}) {
      check(sv, false, track);
      check(sv, true, track);
    }
  };
  both(store_of({{0.5, 0.0}, {0.0, 0.0}}, {{-1.0}, {0.3}}));                            // m last: z goes to n's slot
  both(store_of({{0.0, 0.0}, {0.4, 0.1}, {-1.0, 2.0}}, {{0.8}, {1.5}, {-0.2}}));        // m last of three
  both(store_of({{0.3, -0.1}, {1.0, 1.0}, {0.3, -0.1}}, {{0.2}, {1.5}, {-0.7}}));       // duplicate partner
  both(store_of({{0.0, 0.0}, {100.0, 0.0}, {0.0, 90.0}}, {{0.3}, {-0.9}, {2.0}}));      // k = 0 everywhere (ties)
  both(store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}, {{1.0}, {0.0}, {-2.0}}));         // alpha_m = 0: erased
  both(store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}, {{1.0}, {-2.0}, {0.0}}));         // alpha_m = 0, last
  both(store_of({{1.0, 2.0}, {1.0, 2.0}, {0.0, 0.0}}, {{0.1, -0.1, 0.0}, {-0.1, 0.1, 0.0}, {2.0, 0.0, -2.0}}));
  // Errors: non-RBF, < 2 SVs, a cache out of sync, another kernel.
  SupportVectors sv = store_of({{0.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}}, {{1.0}, {-2.0}, {0.5}});
  Merging mg(k);
  CHECK_THROWS(mg.reduce(sv, k));  // not rebuilt: out of sync
  mg.rebuild(sv, k);
  CHECK_THROWS(mg.reduce(sv, Kernel(KernelType::RBF, 2.0)));
  CHECK_THROWS(mg.reduce(sv, Kernel(KernelType::Linear)));
  Vector krow = Vector::Zero(4);
  CHECK_THROWS(mg.on_push(sv, krow, 1.0));  // nothing was pushed
  SupportVectors one = store_of({{0.0, 0.0}}, {{1.0}});
  Merging m1(k);
  m1.rebuild(one, k);
  CHECK_THROWS(m1.reduce(one, k));
  CHECK(sv.size() == 3 && mg.gram().size() == 3);
  mg.clear();
  CHECK(mg.gram().size() == 0);
}

TEST_CASE("merge partner search: pruned == exhaustive scan; the table's lower bound holds") {
  const detail::MergeTable& table = detail::merge_table();
  std::mt19937_64 rng(70);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  // 1. per_unit(r, k) >= lower_bound(k) - slack, including the grid's edges.
  double worst = 0.0;  // max of lower_bound(k) - per_unit(r, k)
  for (int t = 0; t < 1000000; ++t) {
    double r = 2 * U(rng) - 1, k = U(rng);
    if (t % 5 == 1) k = std::pow(U(rng), 8);
    if (t % 5 == 2) k = 1 - std::pow(U(rng), 8);
    if (t % 7 == 3) r = t % 2 ? 1.0 : -1.0;
    if (t % 11 == 4) k = static_cast<double>(static_cast<int>(k * 1024)) / 1024.0;  // bin edges
    worst = std::max(worst, table.lower_bound(k) - table.per_unit(r, k));
  }
  std::printf("  max (lower_bound(k) - per_unit(r, k)) over 1e6 (r, k) = %.3g (slack %.0g)\n", worst,
              detail::MergeTable::lb_slack);
  CHECK(worst <= detail::MergeTable::lb_slack);
  for (int t = 0; t < 100000; ++t) {
    const double v = t % 3 ? U(rng) : std::pow(U(rng), 6), thr = table.prune_below(v), fast = table.prune_below_fast(v);
    CHECK(fast <= thr);
    const double k = thr * U(rng);  // below the threshold: the bound exceeds v
    if (thr > 0.0 && k < thr) CHECK(table.lower_bound(k) > v + detail::MergeTable::lb_slack);
  }
  // 2. Same partner as the scan on random binary stores (duplicates, far points, |r| = 1).
  int stores = 0, same = 0;
  double evaluated = 0.0, candidates = 0.0;
  Vector krow;
  for (int t = 0; t < 8000; ++t) {
    const Index d = 1 + t % 3, B = 2 + static_cast<Index>(U(rng) * 299);
    const Kernel k(KernelType::RBF, std::exp(std::log(0.05) + U(rng) * std::log(200.0)));
    SupportVectors sv = random_store(rng, d, B, 1, Coef::Binary);
    if (t % 5 == 0)  // duplicates and equal magnitudes
      for (Index i = 1; i < B; i += 3) {
        sv.set_x(i, sv.x(i - 1).transpose());
        sv.alpha(i)(0) = U(rng) < 0.5 ? sv.alpha(i - 1)(0) : -sv.alpha(i - 1)(0);
      }
    if (t % 7 == 0)  // far apart
      for (Index i = 0; i < B; ++i) sv.set_x(i, (100.0 * static_cast<double>(i)) * Eigen::VectorXd::Ones(d));
    double m_norm = 0.0;
    const Index m = detail::merge_smallest(sv, m_norm, krow);
    if (m_norm == 0.0) continue;
    if (krow.size() < B) krow.resize(B);
    sv.kernel_row(k, sv.x(m).transpose(), sv.sqnorm()(m), krow);
    krow(m) = 1.0;
    const Index n1 = detail::merge_partner(sv, m, krow.data());
    const Index n2 = detail::merge_partner_scan(sv, m, krow.data());
    ++stores;
    same += n1 == n2;
    const double best = table.per_unit(sv.alpha(m)(0) / sv.alpha(n2)(0), krow(n2)), thr = table.prune_below_fast(best);
    for (Index j = 0; j < B; ++j)
      if (j != m) candidates += 1.0, evaluated += krow(j) >= thr;
  }
  std::printf("  %d binary stores (B = 2..300): pruned search == scan (partner) in %d; at most %.1f%% of "
              "the candidates need the table look-up\n",
              stores, same, 100.0 * evaluated / candidates);
  CHECK(same == stores);
}

TEST_CASE("Merging (cached): no heap allocation once warmed up") {
  for (Index c : {1, 3}) {
    std::mt19937_64 rng(51);
    SupportVectors sv = random_store(rng, 4, 60, c, c == 1 ? Coef::Binary : Coef::PegasosMulti);
    const Kernel k(KernelType::RBF, 0.5);
    Merging mg(k);
    mg.rebuild(sv, k);
    mg.reduce(sv, k);  // sizes the work vectors
    Vector krow = Vector::Zero(64), x = Vector::Ones(4), a = Vector::Constant(c, 0.3);
    (void)detail::merge_table();
    const int before = bk_test_eigen::forbidden_allocations();
    Eigen::internal::set_is_malloc_allowed(false);
    for (int i = 0; i < 20; ++i) {
      mg.reduce(sv, k);
      x(0) = 0.1 * i;
      sv.kernel_row(k, x, x.squaredNorm(), krow);
      sv.push(x, a, 5000 + i);
      mg.on_push(sv, krow, 1.0);
      mg.reduce(sv, k);
    }
    Eigen::internal::set_is_malloc_allowed(true);
    CHECK(bk_test_eigen::forbidden_allocations() == before);
    CHECK(sv.size() == 39 && mg.gram().size() == 39);
  }
}

TEST_CASE("Merging, widened search: the least-degrading pair, its degradation the RKHS distance") {
  const Kernel k(KernelType::RBF, 1.5);
  for (const bool track : {false, true})
  for (Index c : {1, 3}) {
    SupportVectors sv(2, c, 16);
    const RowMatrix X = bk_test::random_matrix(12, 2, 21);
    const RowMatrix A = bk_test::random_matrix(12, c, 22).cwiseAbs() + RowMatrix::Constant(12, c, 0.1);
    for (Index i = 0; i < 12; ++i) sv.push(X.row(i).transpose(), A.row(i).transpose(), i);
    // oracle: every pair merged on a copy (merge_pair's exact h), the least degradation
    double best = std::numeric_limits<double>::infinity();
    for (Index m = 0; m < 12; ++m)
      for (Index n = 0; n < 12; ++n)
        if (m != n) {
          Vector z(2 + c);
          best = std::min(best, detail::merge_pair(sv, k, m, n, z.data(), z.data() + 2).degradation);
        }
    SupportVectors before = sv;
    Merging mg(k, MergeSearch{12, 11});  // the whole search
    if (track)
      mg.rebuild(sv, k);
    else
      mg.track_norm(false, sv);
    const MaintenanceResult r = mg.reduce(sv, k);
    CHECK(sv.size() == 11);
    CHECK_NEAR(r.degradation, best, 1e-12);
    // ||w_before - w_after||^2 from the two expansions' Gram matrices
    const auto gram = [&](const SupportVectors& a, const SupportVectors& b) {
      RowMatrix G(a.size(), b.size());
      for (Index i = 0; i < a.size(); ++i)
        for (Index j = 0; j < b.size(); ++j) G(i, j) = k.value(a.x(i).transpose(), b.x(j).transpose());
      return G;
    };
    const RowMatrix Ab = before.A().topRows(12), Aa = sv.A().topRows(11);
    const double dist = (Ab.transpose() * gram(before, before) * Ab).trace() -
                        2.0 * (Ab.transpose() * gram(before, sv) * Aa).trace() +
                        (Aa.transpose() * gram(sv, sv) * Aa).trace();
    CHECK_NEAR(r.degradation, dist, 1e-10);
    CHECK(r.norm_exact == track);
    if (track)  // norm_change = ||w_after||^2 - ||w_before||^2
      CHECK_NEAR(r.norm_change, (Aa.transpose() * gram(sv, sv) * Aa).trace() -
                                    (Ab.transpose() * gram(before, before) * Ab).trace(), 1e-10);
  }
}

TEST_MAIN()
