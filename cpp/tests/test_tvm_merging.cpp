// The Twin Vector Machine's twin set (budget/twin_set.hpp; TVM paper, section 4): the merging
// bookkeeping against brute force (input and feature space, the overflow twin TV_{B+1} as a
// merge candidate), the merges against closed forms and 1-D searches, Rejection (4.2.4).
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>

#include <cmath>
#include <random>

#include "test_tvm_fixtures.hpp"
#include "test_util.hpp"

using namespace budgetkernel;
using namespace tvm_test;

// ---------------------------------------------------------------- twin bookkeeping (no machine)

TEST_CASE("input-space partner bookkeeping equals brute force after every step") {
  for (bool one_sided : {true, false}) {
    int bad = 0, rule_bad = 0;
    run_bookkeeping(TVMMerge::Input, Kernel(KernelType::RBF, 0.5), one_sided, 40, 3000, one_sided ? 1 : 2, bad, rule_bad);
    CHECK(bad == 0);
    CHECK(rule_bad == 0);
  }
}

TEST_CASE("feature-space partner bookkeeping equals a brute-force scan of its rule") {
  int bad = 0, rule_bad = 0;
  run_bookkeeping(TVMMerge::Feature, Kernel(KernelType::RBF, 0.5), true, 24, 1500, 3, bad, rule_bad);
  CHECK(bad == 0);
  run_bookkeeping(TVMMerge::Feature, Kernel(KernelType::Polynomial, 0.3, 3, 1.0), false, 16, 600, 4, bad, rule_bad);
  CHECK(bad == 0);
}

TEST_CASE("overflow twin: its partner and distortion equal a brute-force scan of the pair rule") {
  struct V {
    TVMMerge merge;
    Kernel kernel;
    bool one_sided;
  };
  const V vs[] = {{TVMMerge::Input, Kernel(KernelType::RBF, 0.5), true},
                  {TVMMerge::Input, Kernel(KernelType::RBF, 0.5), false},
                  {TVMMerge::Feature, Kernel(KernelType::RBF, 0.5), true},
                  {TVMMerge::Feature, Kernel(KernelType::RBF, 0.5), false},
                  {TVMMerge::Feature, Kernel(KernelType::Polynomial, 0.3, 3, 1.0), true},
                  {TVMMerge::Feature, Kernel(KernelType::Polynomial, 0.3, 3, 1.0), false}};
  std::uint64_t seed = 31;
  for (const V& v : vs) {
    int bad = 0, rule_bad = 0, over_bad = 0, over_merges = 0;
    run_bookkeeping(v.merge, v.kernel, v.one_sided, 16, v.kernel.type() == KernelType::Polynomial ? 500 : 1200, seed++, bad, rule_bad,
                    &over_bad, &over_merges);
    CHECK(bad == 0);  // the members' bookkeeping is intact after overflow merges
    CHECK(rule_bad == 0);
    CHECK(over_bad == 0);
    CHECK(over_merges > 0);
  }
}

TEST_CASE("overflow twin: a candidate in distortion order, subject to Rejection") {
  detail::TwinSet tw;
  tw.reset(1, 4, Kernel(KernelType::RBF, 1.0), TVMMerge::Input, false);
  // stored pairs: (0,1) d = 0.005, (2,3) d = 0.02 (weights 1); overflow x = 5.3, weight 1,
  // partner 3 (weight 2 after the set_twin below): d = 2 * 1 * 0.01 / 3
  const double q[4] = {0.0, 0.1, 5.0, 5.2};
  for (int j = 0; j < 4; ++j) tw.set_twin(j, q + j, 1.0, 0.0);
  tw.set_twin(3, q + 3, 1.0, 1.0);
  for (int j = 0; j < 4; ++j) tw.set_fval(j, 1.0);
  tw.update_partners();
  const double x = 5.3;
  tw.set_overflow(&x, 0.0, 1.0, 1.0);
  CHECK(tw.overflow_slot() == 4);
  CHECK(tw.overflow_partner() == 3);
  CHECK_NEAR(tw.overflow_distortion(), 2.0 * 0.01 / 3.0, 1e-15);
  // (2,3) now has d = 2 * 0.04 / 3 = 0.0267; order: (0,1), overflow (0.0067), (2,3)
  double z[1];
  detail::TwinMerge mg;
  auto tvm = [](const double* p) { return p[0] < 2.0 ? 2.0 : 1.0; };  // rejects the merge near 0
  int evals = 0;
  auto counted = [&](const double* p) {
    ++evals;
    return tvm(p);
  };
  CHECK(tw.choose_merge(0.2, 10, counted, mg, z));
  CHECK(mg.overflow && mg.i == 3 && mg.j == 4 && evals == 2);
  CHECK_NEAR(z[0], (2.0 * 5.2 + 5.3) / 3.0, 1e-14);
  CHECK_NEAR(mg.distortion, 2.0 * 0.01 / 3.0, 1e-15);
  CHECK(!tw.has_overflow());
  // consumed: without a new set_overflow only the stored pairs compete, (2,3) is next
  CHECK(tw.choose_merge(0.2, 10, tvm, mg, z));
  CHECK(!mg.overflow && mg.i == 2 && mg.j == 3);
  // T^ uses TVM(x): with TVM(x) = -1, T^ = (2 * 1 - 1) / 3 = 1/3 and TVM(q_new) = 1 is outside
  // the band, so (2,3) is taken instead (Global merging: the signs do not matter)
  tw.set_overflow(&x, 0.0, 1.0, -1.0);
  CHECK(tw.choose_merge(0.2, 10, tvm, mg, z));
  CHECK(!mg.overflow && mg.i == 2 && mg.j == 3);
  // One-Sided: an overflow twin alone in its region has no partner and no candidate
  detail::TwinSet one;
  one.reset(1, 2, Kernel(KernelType::RBF, 1.0), TVMMerge::Input, true);
  one.set_twin(0, q, 1.0, 0.0);
  one.set_twin(1, q + 1, 1.0, 0.0);
  one.set_fval(0, 0.5);
  one.set_fval(1, 0.5);
  one.update_partners();
  one.set_overflow(&x, 0.0, 1.0, -0.5);
  CHECK(one.overflow_partner() == -1 && one.overflow_distortion() == inf);
  CHECK(one.choose_merge(-1.0, 10, tvm, mg, z));
  CHECK(!mg.overflow && mg.i == 0 && mg.j == 1);
  // any set_twin invalidates a pending overflow twin
  one.set_overflow(&x, 0.0, 1.0, 0.5);
  CHECK(one.has_overflow() && one.overflow_partner() == 1);
  one.set_twin(0, q, 1.0, 0.0);
  CHECK(!one.has_overflow());
}

TEST_CASE("input-space merge: q_new and d* are the closed forms") {
  detail::TwinSet tw;
  tw.reset(3, 4, Kernel(KernelType::RBF, 1.0), TVMMerge::Input, false);
  const double qa[3] = {0.5, -1.0, 2.0}, qb[3] = {1.5, 0.0, -1.0};
  tw.set_twin(0, qa, 3.0, 1.0);  // s = 4
  tw.set_twin(1, qb, 0.0, 2.0);  // s = 2
  tw.set_fval(0, 0.3);
  tw.set_fval(1, -0.4);
  tw.update_partners();
  double z[3];
  tw.merge_point(0, 1, z);
  for (int l = 0; l < 3; ++l) CHECK_NEAR(z[l], (4.0 * qa[l] + 2.0 * qb[l]) / 6.0, 1e-15);
  const double dist2 = 1.0 + 1.0 + 9.0;
  CHECK_NEAR(tw.pair_distortion(0, 1), 4.0 * 2.0 * dist2 / 6.0, 1e-14);
  // d* is also the input distortion s_i |q_i - q_new|^2 + s_j |q_j - q_new|^2 at the optimum.
  double dd = 0.0;
  for (int l = 0; l < 3; ++l) dd += 4.0 * (qa[l] - z[l]) * (qa[l] - z[l]) + 2.0 * (qb[l] - z[l]) * (qb[l] - z[l]);
  CHECK_NEAR(tw.pair_distortion(0, 1), dd, 1e-13);
  CHECK(tw.partner(0) == 1 && tw.partner(1) == 0);
  // One-Sided: opposite signs of TVM(q) may not merge.
  detail::TwinSet one;
  one.reset(3, 4, Kernel(KernelType::RBF, 1.0), TVMMerge::Input, true);
  one.set_twin(0, qa, 3.0, 1.0);
  one.set_twin(1, qb, 0.0, 2.0);
  one.set_fval(0, 0.3);
  one.set_fval(1, -0.4);
  one.update_partners();
  CHECK(one.pair_distortion(0, 1) == inf);
  CHECK(one.partner(0) == -1 && one.partner(1) == -1);
  one.set_fval(1, 0.0);  // sign 0 counts as positive
  one.update_partners();
  CHECK(one.partner(0) == 1 && one.partner(1) == 0);
}

TEST_CASE("feature-space merge (RBF): h is the 1-D optimum, distortion from kernel values") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<int> w(1, 30);
  int checked = 0;
  for (double gamma : {0.1, 1.0, 5.0}) {
    const Kernel k(KernelType::RBF, gamma);
    for (int rep = 0; rep < 40; ++rep) {
      detail::TwinSet tw;
      tw.reset(2, 2, k, TVMMerge::Feature, false);
      Vector qi(2), qj(2);
      qi << nd(rng), nd(rng);
      qj << nd(rng), nd(rng);
      const double si = w(rng), sj = w(rng);
      tw.set_twin(0, qi.data(), si, 0.0);
      tw.set_twin(1, qj.data(), std::floor(sj / 2), sj - std::floor(sj / 2));
      tw.update_partners();
      Vector z(2);
      const double h = tw.merge_point(0, 1, z.data());
      // maximise s_i k^{(1-h)^2} + s_j k^{h^2}, k = k(q_i, q_j), over a wide interval
      const double kk = k.value(qi, qj);
      auto neg = [&](double t) { return -(si * std::pow(kk, (1 - t) * (1 - t)) + sj * std::pow(kk, t * t)); };
      const double h_ref = grid_golden_min(neg, -0.5, 1.5, 20000);
      CHECK_NEAR(h, h_ref, 1e-6);
      CHECK(neg(h) <= neg(h_ref) + 1e-14 * std::fabs(neg(h_ref)));
      CHECK((z - (h * qi + (1.0 - h) * qj)).norm() <= 1e-12);
      CHECK_NEAR(tw.pair_distortion(0, 1), feature_distortion(k, qi, qj, si, sj, z), 1e-10 * (si + sj));
      ++checked;
    }
  }
  CHECK(checked == 120);
}

TEST_CASE("feature-space merge (polynomial, linear): pre-image on the segment, distortion exact") {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<int> w(1, 20);
  for (const Kernel& k : {Kernel(KernelType::Polynomial, 0.5, 3, 1.0), Kernel(KernelType::Polynomial, 1.0, 2, 0.5),
                          Kernel(KernelType::Linear)}) {
    for (int rep = 0; rep < 30; ++rep) {
      detail::TwinSet tw;
      tw.reset(3, 2, k, TVMMerge::Feature, false);
      Vector qi(3), qj(3);
      for (int l = 0; l < 3; ++l) qi(l) = nd(rng), qj(l) = nd(rng);
      const double si = w(rng), sj = w(rng);
      tw.set_twin(0, qi.data(), si, 0.0);
      tw.set_twin(1, qj.data(), 0.0, sj);
      Vector z(3);
      const double h = tw.merge_point(0, 1, z.data());
      auto dist = [&](double t) {
        const Vector zt = t * qi + (1.0 - t) * qj;
        return feature_distortion(k, qi, qj, si, sj, zt);
      };
      const double h_ref = grid_golden_min(dist, 0.0, 1.0, 20000);
      CHECK_NEAR(h, h_ref, 1e-6);
      CHECK(dist(h) <= dist(h_ref) + 1e-12 * (1.0 + std::fabs(dist(h_ref))));
      CHECK_NEAR(tw.pair_distortion(0, 1), dist(h), 1e-9 * (1.0 + dist(h)));
      if (k.type() == KernelType::Linear) {
        CHECK_NEAR(h, si / (si + sj), 1e-15);
        CHECK_NEAR(tw.pair_distortion(0, 1), si * sj * (qi - qj).squaredNorm() / (si + sj), 1e-10);
      }
    }
  }
}

TEST_CASE("Rejection: the band arithmetic") {
  // T^ = (s_i f_i + s_j f_j) / (s_i + s_j)
  CHECK_NEAR(detail::tvm_linear_estimate(3.0, 0.5, 1.0, -0.5), 0.25, 1e-15);
  // positive T^ = 1, eta = 0.2: (0.8, 1.2), open
  CHECK(detail::tvm_accept_merge(1.1, 1.0, 0.2));
  CHECK(detail::tvm_accept_merge(0.81, 1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(0.79, 1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(1.21, 1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(0.8, 1.0, 0.2));
  // negative T^ = -1: the ends swap, (-1.2, -0.8)
  CHECK(detail::tvm_accept_merge(-1.1, -1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(-0.7, -1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(-1.3, -1.0, 0.2));
  CHECK(!detail::tvm_accept_merge(1.0, -1.0, 0.2));
  // T^ = 0: empty band; off (eta < 0): everything passes
  CHECK(!detail::tvm_accept_merge(0.0, 0.0, 0.2));
  CHECK(detail::tvm_accept_merge(-5.0, 1.0, -1.0));
}

TEST_CASE("Rejection: a merge outside the band is rejected and the next candidate tried") {
  detail::TwinSet tw;
  tw.reset(1, 6, Kernel(KernelType::RBF, 1.0), TVMMerge::Input, false);
  // pairs by distortion: (0,1) d=0.005, (2,3) d=0.02, (4,5) d=0.045; all weights 1
  const double q[6] = {0.0, 0.1, 5.0, 5.2, 10.0, 10.3};
  for (int j = 0; j < 6; ++j) tw.set_twin(j, q + j, 1.0, 0.0);
  for (int j = 0; j < 6; ++j) tw.set_fval(j, 1.0);
  tw.update_partners();
  CHECK(tw.partner(0) == 1 && tw.partner(2) == 3 && tw.partner(4) == 5);
  double z[1];
  detail::TwinMerge mg;
  // TVM(q_new) = 2 (outside (0.8, 1.2)) near 0 and near 5; = 1 near 10
  auto tvm = [](const double* p) { return p[0] < 7.0 ? 2.0 : 1.0; };
  int evals = 0;
  auto counted = [&](const double* p) {
    ++evals;
    return tvm(p);
  };
  CHECK(tw.choose_merge(0.2, 10, counted, mg, z));
  CHECK(mg.i == 4 && mg.j == 5);
  CHECK_NEAR(z[0], 10.15, 1e-14);
  CHECK_NEAR(mg.distortion, 0.3 * 0.3 / 2.0, 1e-14);
  CHECK(evals == 3);
  // only two tries: no candidate passes, the overflow twin would be ignored
  CHECK(!tw.choose_merge(0.2, 2, tvm, mg, z));
  // Rejection off: the first (best) candidate without evaluating TVM
  evals = 0;
  CHECK(tw.choose_merge(-1.0, 10, counted, mg, z));
  CHECK(mg.i == 0 && mg.j == 1 && evals == 0);
  CHECK_NEAR(z[0], 0.05, 1e-15);
  // accepted first try when TVM(q_new) is in the band
  auto good = [](const double*) { return 1.05; };
  CHECK(tw.choose_merge(0.2, 10, good, mg, z));
  CHECK(mg.i == 0 && mg.j == 1);
}

TEST_MAIN()
