// Tests of detail::uniform_index / uniform01 and of removal-based budget maintenance.
#include "budgetkernel/budget/removal.hpp"
#include "budgetkernel/detail/random.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <random>
#include <vector>

using namespace budgetkernel;

namespace {

// Deterministic pseudo-normal values from our own uniform01 (Box-Muller), so the fixtures
// do not depend on the standard library's distributions either.
double gauss(std::mt19937_64& rng) {
  const double u1 = 1.0 - detail::uniform01(rng), u2 = detail::uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

SupportVectors random_store(std::mt19937_64& rng, Index n, Index d, Index c, double x_scale = 1.0) {
  SupportVectors sv(d, c, 4);  // small capacity: push grows it
  for (Index i = 0; i < n; ++i) {
    Vector x(d), a(c);
    for (Index j = 0; j < d; ++j) x(j) = x_scale * gauss(rng);
    for (Index j = 0; j < c; ++j) a(j) = gauss(rng);
    sv.push(x, a, 1000 + 7 * i);
  }
  return sv;
}

// ||sum_i A_i phi(X_i) - sum_j B_j phi(Y_j)||^2 summed over classes, by kernel expansion.
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
  SupportVectors empty(a.dim(), a.n_coef(), 1);
  return weight_sqdist(k, a, empty);
}

}  // namespace

// ---------------------------------------------------------------- detail/random.hpp

TEST_CASE("mt19937_64 is the standard engine (10000th output of the default seed)") {
  std::mt19937_64 rng;
  rng.discard(9999);
  CHECK(rng() == 9981545732273789042ULL);
}

TEST_CASE("uniform_index: fixed seed -> fixed sequence (checked against an independent Python MT19937-64)") {
  std::mt19937_64 rng(42);
  const Index expect10[20] = {7, 6, 7, 1, 9, 0, 5, 3, 2, 3, 0, 5, 6, 6, 8, 9, 7, 4, 0, 0};
  for (Index e : expect10) CHECK(detail::uniform_index(rng, 10) == e);
  std::mt19937_64 rng2(42);
  const Index expect_big[8] = {755157, 639033, 752147, 136273, 903271, 94068, 574572, 372888};
  for (Index e : expect_big) CHECK(detail::uniform_index(rng2, 1000003) == e);
  // n = 3 * 2^61: 2^64 mod n = 2^62, so a quarter of the draws are rejected.
  std::mt19937_64 rng3(2024);
  const Index big = Index(3) << 61;
  const std::int64_t expect_rej[6] = {4238263126647510740LL, 5497471457549521488LL, 1837690979678070067LL,
                                      2312510453138929017LL, 42849254079719254LL,   969882758375014078LL};
  for (std::int64_t e : expect_rej) CHECK(detail::uniform_index(rng3, big) == e);
  std::mt19937_64 rng4(42);
  CHECK(detail::uniform01(rng4) == 0.755155532954539);
  CHECK(detail::uniform01(rng4) == 0.6390313938546974);
  CHECK(detail::uniform01(rng4) == 0.7521452007480266);
  CHECK(detail::uniform01(rng4) == 0.13627268363243705);
}

TEST_CASE("uniform_index: range, n = 1, invalid n, and the portable 128-bit product") {
  std::mt19937_64 rng(1);
  const Index ns[] = {1, 2, 3, 7, 10, 1000, (Index(1) << 40) + 3, (Index(3) << 61), std::numeric_limits<Index>::max()};
  for (Index n : ns)
    for (int i = 0; i < 2000; ++i) {
      const Index v = detail::uniform_index(rng, n);
      CHECK(v >= 0 && v < n);
    }
  for (int i = 0; i < 100; ++i) CHECK(detail::uniform_index(rng, 1) == 0);
  CHECK_THROWS(detail::uniform_index(rng, 0));
  CHECK_THROWS(detail::uniform_index(rng, -5));
  for (int i = 0; i < 100000; ++i) {
    const double u = detail::uniform01(rng);
    CHECK(u >= 0.0 && u < 1.0);
  }
#if defined(__SIZEOF_INT128__)
  __extension__ typedef unsigned __int128 u128;
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t a = rng(), b = (i % 3 == 0) ? ~std::uint64_t(0) - (rng() & 0xFF) : rng();
    std::uint64_t hi, lo;
    detail::mul_64x64_128(a, b, hi, lo);
    const u128 m = static_cast<u128>(a) * b;
    CHECK(hi == static_cast<std::uint64_t>(m >> 64) && lo == static_cast<std::uint64_t>(m));
  }
#endif
}

TEST_CASE("uniform_index is uniform (chi-square over 70,000 draws, n = 7)") {
  std::mt19937_64 rng(123);
  std::vector<double> count(7, 0.0);
  for (int i = 0; i < 70000; ++i) count[static_cast<std::size_t>(detail::uniform_index(rng, 7))] += 1.0;
  double chi2 = 0.0;
  for (double c : count) chi2 += (c - 10000.0) * (c - 10000.0) / 10000.0;
  std::printf("  chi2 = %.2f (6 dof; 99.9%% quantile 22.46)\n", chi2);
  CHECK(chi2 < 22.46);
}

// ---------------------------------------------------------------- choose_removal

TEST_CASE("choose_removal Random: reproducible for a fixed seed, roughly uniform") {
  std::mt19937_64 g(5);
  const SupportVectors sv = random_store(g, 10, 3, 1);
  const Kernel k(KernelType::RBF, 0.5);
  std::mt19937_64 r1(77), r2(77), r3(77);
  for (int i = 0; i < 1000; ++i) {
    const Index a = choose_removal(sv, k, RemovalRule::Random, r1);
    CHECK(a == choose_removal(sv, k, RemovalRule::Random, r2));
    CHECK(a == detail::uniform_index(r3, 10));  // exactly one draw of uniform_index
  }
  std::vector<int> count(10, 0);
  for (int i = 0; i < 50000; ++i) ++count[static_cast<std::size_t>(choose_removal(sv, k, RemovalRule::Random, r1))];
  for (int c : count) CHECK(c > 4750 && c < 5250);  // 5000 +- 5% (3.5 sd)
  SupportVectors empty(3, 1, 2);
  CHECK_THROWS(choose_removal(empty, k, RemovalRule::Oldest, r1));
}

TEST_CASE("choose_removal Oldest picks the smallest id; Smallest the argmin ||alpha||^2 k(x, x)") {
  std::mt19937_64 g(9);
  std::mt19937_64 unused(0);
  for (int trial = 0; trial < 20; ++trial) {
    SupportVectors sv = random_store(g, 15, 4, trial % 2 ? 3 : 1, 1.5);
    // Shuffle the ids.
    for (Index i = 14; i > 0; --i) {
      const Index j = detail::uniform_index(g, i + 1);
      const std::int64_t t = sv.id(i);
      sv.set_id(i, sv.id(j));
      sv.set_id(j, t);
    }
    Index oldest = 0;
    for (Index i = 1; i < sv.size(); ++i)
      if (sv.id(i) < sv.id(oldest)) oldest = i;
    CHECK(choose_removal(sv, Kernel(), RemovalRule::Oldest, unused) == oldest);
    // Polynomial kernel: k(x, x) varies with |x|, so Smallest is not just the smallest alpha.
    const Kernel poly(KernelType::Polynomial, 0.5, 2, 1.0);
    const Kernel rbf(KernelType::RBF, 0.3);
    for (const Kernel& k : {poly, rbf}) {
      Index best = 0;
      double best_v = 1e300;
      for (Index i = 0; i < sv.size(); ++i) {
        const double v = sv.alpha(i).squaredNorm() * k.value(sv.x(i), sv.x(i));
        if (v < best_v) best_v = v, best = i;
      }
      CHECK(choose_removal(sv, k, RemovalRule::Smallest, unused) == best);
    }
  }
}

// ---------------------------------------------------------------- remove_sv

TEST_CASE("remove_sv: degradation and norm_change equal brute-force kernel expansions") {
  std::mt19937_64 g(31);
  const Kernel kernels[] = {Kernel(KernelType::RBF, 0.5), Kernel(KernelType::Polynomial, 0.5, 3, 1.0),
                            Kernel(KernelType::Linear)};
  double worst_deg = 0.0, worst_norm = 0.0, worst_abs = 0.0, max_scale = 0.0;
  Vector work;  // empty: remove_sv grows it
  for (const Kernel& k : kernels)
    for (Index c : {Index(1), Index(3)})
      for (int trial = 0; trial < 10; ++trial) {
        SupportVectors sv = random_store(g, 12, 4, c);
        const SupportVectors before = sv;
        const Index p = detail::uniform_index(g, sv.size());
        const MaintenanceResult r = remove_sv(sv, k, p, work);
        CHECK(work.size() >= before.size());
        CHECK(sv.size() == before.size() - 1);
        // The store is `before` with swap-with-last erase of p.
        SupportVectors expect = before;
        expect.erase(p);
        CHECK((sv.A().topRows(sv.size()) - expect.A().topRows(sv.size())).cwiseAbs().maxCoeff() == 0.0);
        CHECK((sv.X().topRows(sv.size()) - expect.X().topRows(sv.size())).cwiseAbs().maxCoeff() == 0.0);
        const double deg = weight_sqdist(k, before, sv);
        const double dn = weight_sqnorm(k, sv) - weight_sqnorm(k, before);
        const double scale = std::max(1.0, weight_sqnorm(k, before));
        worst_deg = std::max(worst_deg, std::abs(r.degradation - deg) / scale);
        worst_norm = std::max(worst_norm, std::abs(r.norm_change - dn) / scale);
        worst_abs = std::max({worst_abs, std::abs(r.degradation - deg), std::abs(r.norm_change - dn)});
        max_scale = std::max(max_scale, scale);
        CHECK_NEAR(r.degradation, deg, 1e-10);
        CHECK_NEAR(r.norm_change, dn, 1e-10);
      }
  std::printf("  worst |error| / max(1, ||w||^2): degradation %.3g, norm_change %.3g; worst absolute error %.3g"
              " (largest ||w||^2 %.3g)\n", worst_deg, worst_norm, worst_abs, max_scale);
  // The last SV (no swap) and the only SV.
  SupportVectors sv = random_store(g, 1, 2, 2);
  const SupportVectors before = sv;
  const Kernel k(KernelType::RBF, 1.0);
  const MaintenanceResult r = remove_sv(sv, k, 0, work);
  CHECK(sv.size() == 0);
  CHECK_NEAR(r.degradation, before.alpha(0).squaredNorm(), 1e-15);
  CHECK_NEAR(r.norm_change, -before.alpha(0).squaredNorm(), 1e-15);
  CHECK_THROWS(remove_sv(sv, k, 0, work));
}

TEST_CASE("Smallest + remove_sv is the least-degradation removal (BSGD 4.1)") {
  std::mt19937_64 g(8);
  std::mt19937_64 unused(0);
  const Kernel k(KernelType::Polynomial, 0.5, 2, 1.0);
  Vector work;
  for (int trial = 0; trial < 10; ++trial) {
    const SupportVectors sv = random_store(g, 10, 3, 2, 1.5);
    double best = 1e300;
    for (Index p = 0; p < sv.size(); ++p) {
      SupportVectors t = sv;
      best = std::min(best, remove_sv(t, k, p, work).degradation);
    }
    SupportVectors t = sv;
    const MaintenanceResult r = remove_sv(t, k, choose_removal(sv, k, RemovalRule::Smallest, unused), work);
    CHECK(r.degradation == best);
  }
}

// ---------------------------------------------------------------- Removal (cached)

TEST_CASE("Removal (cached) == choose_removal + remove_sv, over sequences of pushes and removals") {
  const Kernel kernels[] = {Kernel(KernelType::RBF, 0.5), Kernel(KernelType::RBF, 3.0),
                            Kernel(KernelType::Polynomial, 0.5, 3, 1.0), Kernel(KernelType::Linear)};
  const RemovalRule rules[] = {RemovalRule::Random, RemovalRule::Oldest, RemovalRule::Smallest};
  std::mt19937_64 g(41);
  Vector work, krow;
  int removals = 0, same_store = 0, same_deg = 0, cache_bitwise = 0;
  double worst_norm = 0.0, worst_norm_rel = 0.0, worst_brute = 0.0, worst_cache = 0.0;
  for (const Kernel& k : kernels)
    for (RemovalRule rule : rules)
      for (Index c : {Index(1), Index(3)})
        for (int trial = 0; trial < 4; ++trial) {
          const Index d = 2 + trial;
          SupportVectors ref = random_store(g, 10 + 9 * trial, d, c);
          SupportVectors sv = ref;
          Removal rm(rule, k);
          CHECK(rm.rule() == rule);
          rm.rebuild(sv, k);
          std::mt19937_64 r1(trial), r2(trial);
          for (int step = 0; step < 40; ++step) {
            const SupportVectors before = sv;
            const MaintenanceResult q1 = remove_sv(ref, k, choose_removal(ref, k, rule, r1), work);
            const MaintenanceResult q2 = rm.reduce(sv, k, r2);
            ++removals;
            const Index n = sv.size();
            const bool same = ref.size() == n && (ref.X().topRows(n) - sv.X().topRows(n)).cwiseAbs().maxCoeff() == 0.0 &&
                              (ref.A().topRows(n) - sv.A().topRows(n)).cwiseAbs().maxCoeff() == 0.0 &&
                              std::equal(ref.ids().begin(), ref.ids().begin() + n, sv.ids().begin());
            same_store += same;
            same_deg += q1.degradation == q2.degradation;
            const double scale = std::max(1.0, weight_sqnorm(k, before));
            worst_norm = std::max(worst_norm, std::fabs(q1.norm_change - q2.norm_change));
            worst_norm_rel = std::max(worst_norm_rel, std::fabs(q1.norm_change - q2.norm_change) / scale);
            worst_brute = std::max(worst_brute, std::fabs(q2.norm_change - (weight_sqnorm(k, sv) - weight_sqnorm(k, before))) / scale);
            // The cache: the kernel matrix of the store (same expression), bitwise a rebuild.
            CHECK(rm.gram().size() == n);
            GramCache fresh;
            fresh.rebuild(sv, k);
            bool bitwise = fresh.size() == n;
            for (Index i = 0; i < n; ++i)
              for (Index j = 0; j < n; ++j) {
                bitwise = bitwise && rm.gram()(i, j) == fresh(i, j);
                worst_cache = std::max(worst_cache, std::fabs(rm.gram()(i, j) - k.value(sv.x(i), sv.x(j))) /
                                                        std::max(1.0, std::fabs(k.value(sv.x(i), sv.x(j)))));
              }
            cache_bitwise += bitwise;
            if (!same) break;
            // Every other step a new SV arrives (the learner's row through on_push); keep >= 2 SVs.
            if (step % 2 == 0 || sv.size() < 2) {
              Vector x(d), a(c);
              for (Index j = 0; j < d; ++j) x(j) = gauss(g);
              for (Index j = 0; j < c; ++j) a(j) = gauss(g);
              if (krow.size() < n + 1) krow.resize(n + 1);
              sv.push(x, a, 5000 + step);
              ref.push(x, a, 5000 + step);
              // The learner's row, with |x|^2 the store's (GramCache's premise for a bitwise rebuild).
              k.row(sv.X(), sv.sqnorm(), n, sv.x(n).transpose(), sv.sqnorm()(n), krow);
              rm.on_push(sv, krow, k.self(sv.sqnorm()(n)));
            }
          }
        }
  std::printf("  %d removals: same SV and store %d, bitwise-equal degradation %d, cache == rebuild bitwise %d; "
              "|norm_change - remove_sv's| <= %.3g (%.3g relative to max(1, ||w||^2)); vs brute force %.3g relative; "
              "cache vs k.value %.3g relative\n",
              removals, same_store, same_deg, cache_bitwise, worst_norm, worst_norm_rel, worst_brute, worst_cache);
  CHECK(same_store == removals && same_deg == removals && cache_bitwise == removals);
  CHECK(worst_norm_rel <= 1e-14);
  CHECK(worst_brute <= 1e-12);
  CHECK(worst_cache <= 1e-12);
}

TEST_CASE("Removal (cached): the last and the only SV, errors") {
  const Kernel k(KernelType::RBF, 1.0);
  std::mt19937_64 g(12);
  SupportVectors sv = random_store(g, 3, 2, 2);
  Removal rm(RemovalRule::Oldest, k);
  std::mt19937_64 unused(0);
  CHECK_THROWS(rm.reduce(sv, k, unused));  // not rebuilt: out of sync
  rm.rebuild(sv, k);
  CHECK_THROWS(rm.remove(sv, k, 3));
  CHECK_THROWS(rm.remove(sv, Kernel(KernelType::RBF, 2.0), 0));
  SupportVectors ref = sv;
  Vector work;
  for (Index p : {Index(2), Index(0), Index(0)}) {
    const MaintenanceResult a = remove_sv(ref, k, p, work), b = rm.remove(sv, k, p);
    CHECK(a.degradation == b.degradation);
    CHECK_NEAR(a.norm_change, b.norm_change, 1e-15);
    CHECK(rm.gram().size() == sv.size());
  }
  CHECK(sv.size() == 0);
  CHECK_THROWS(rm.reduce(sv, k, unused));
  rm.clear();
  CHECK(rm.gram().size() == 0);
}

TEST_MAIN()
