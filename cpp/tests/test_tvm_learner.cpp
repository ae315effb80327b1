// The Twin Vector Machine (learners/twin_vector_machine.hpp; TVM paper, sections 3-4) and its
// Random baseline: the machine against an IDSVM trained from scratch on the twins, a merge
// into a stored twin, the regression test for the frozen model, tiny and unbudgeted
// budgets, reservoir sampling, multi-class, the diagonal ridge, parameter validation.
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "test_tvm_fixtures.hpp"
#include "test_util.hpp"

using namespace budgetkernel;
using namespace tvm_test;

// ---------------------------------------------------------------- the learner (needs IncrementalSVM)

TEST_CASE("TVM equals an IDSVM trained from scratch on its twins after every step") {
  struct Variant {
    TVMMerge merge;
    bool one_sided;
    double eta;
    bool fixed_C;
    double C, m2;
    Kernel kernel;
  };
  // chosen so that every branch of Algorithm 3 runs: additions, removals (|TVM(q)| > m2),
  // merges of two stored twins, merges of the overflow twin into a stored twin ("absorb") and
  // rejected overflow twins (the last variant's narrow band; with the overflow twin a
  // candidate, a refusal of every pair is rare at eta = 0.2)
  const Kernel rbf(KernelType::RBF, 1.0), poly(KernelType::Polynomial, 0.5, 3, 1.0);
  const Variant variants[] = {{TVMMerge::Input, true, 0.2, true, 1.0, 2.0, rbf},
                              {TVMMerge::Input, false, -1.0, true, 5.0, 1.1, rbf},
                              {TVMMerge::Feature, true, 0.2, true, 2.0, 1.1, rbf},
                              {TVMMerge::Input, true, 0.2, false, 5.0, 1.5, rbf},
                              {TVMMerge::Feature, false, 0.2, true, 1.0, 1.1, poly},
                              {TVMMerge::Input, true, 0.01, true, 1.0, 2.0, rbf}};
  int total_remove = 0, total_reject = 0, total_absorb = 0;
  const Stream s = make_stream(1500, 2, 7);
  const RowMatrix P = probe_points(40, 8);
  for (const Variant& v : variants) {
    TVMParams p = tvm_params(12);
    p.merge = v.merge;
    p.one_sided = v.one_sided;
    p.rejection_eta = v.eta;
    p.fixed_C_total = v.fixed_C;
    p.C = v.C;
    p.m2 = v.m2;
    p.kernel = v.kernel;
    TwinVectorMachine m(2, 2, p);
    double worst = 0.0, worst_c = 0.0;
    int partner_bad = 0, group_bad = 0, over = 0;
    int n_add = 0, n_remove = 0, n_merge = 0, n_absorb = 0, n_reject = 0;
    for (Index i = 0; i < s.X.rows(); ++i) {
      // classify the step by what changed in the twin set (Algorithm 3's branches)
      const RowMatrix Q0 = m.twin_points(), W0 = m.twin_weights();
      const std::int64_t labels0 = m.counters().labels, updates0 = m.counters().updates;
      m.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
      const detail::TwinSet& tw = m.twins(0);
      if (tw.size() > Q0.rows()) {
        ++n_add;
      } else if (m.counters().updates > updates0) {
        int slots = 0;
        Index changed = -1;
        for (Index j = 0; j < tw.size(); ++j)
          if (!(tw.points().row(j) == Q0.row(j)) || tw.s_plus(j) != W0(j, 0) || tw.s_minus(j) != W0(j, 1)) ++slots, changed = j;
        // one slot: a removal (the overflow twin, weight 1, in the slot) or the overflow twin
        // merged into a stored twin (its weight grows by 1, the side of the label)
        if (slots == 1) {
          const double dp = tw.s_plus(changed) - W0(changed, 0), dm = tw.s_minus(changed) - W0(changed, 1);
          const bool pos = s.y[static_cast<std::size_t>(i)] == 1;
          if (tw.points().row(changed) == s.X.row(i) && tw.weight(changed) == 1.0) {
            ++n_remove;
          } else {
            ++n_absorb;
            CHECK(dp == (pos ? 1.0 : 0.0) && dm == (pos ? 0.0 : 1.0));
          }
        }
        if (slots == 2) ++n_merge;
        CHECK(slots == 1 || slots == 2);
      } else if (m.counters().labels > labels0) {
        ++n_reject;  // beneficial, but every merge candidate was rejected
      }
      if (tw.size() > p.budget) ++over;
      if (i % 3 == 0 || i + 1 == s.X.rows()) {
        const IncrementalSVM ref = scratch_machine(m, 0);
        worst = std::max(worst, machine_gap(m.machine(0), ref, P));
      }
      partner_bad += check_partners(tw);
      for (Index j = 0; j < tw.size(); ++j) {
        const double f = m.machine(0).decision(tw.points().row(j).data());
        if (std::fabs(f - tw.fval(j)) > 1e-8) ++group_bad;
        if (v.one_sided && tw.group(j) != (tw.fval(j) >= 0.0 ? 0 : 1)) ++group_bad;
      }
      const double S = tw.total_weight();
      const double expect_C = v.fixed_C ? p.C * p.budget / std::max<double>(p.budget, S) : p.C;
      worst_c = std::max(worst_c, std::fabs(m.current_C(0) - expect_C) / expect_C);
      if (v.fixed_C && S >= p.budget) worst_c = std::max(worst_c, std::fabs(m.current_C(0) * S - p.C * p.budget) / (p.C * p.budget));
    }
    std::printf("  %s merge=%d one_sided=%d eta=%g fixed_C=%d: weight %g, C_t %g; add %d remove %d merge %d absorb %d reject %d; gap %.2e\n",
                kernel_name(v.kernel.type()), static_cast<int>(v.merge), v.one_sided, v.eta, v.fixed_C, m.twins(0).total_weight(), m.current_C(0),
                n_add, n_remove, n_merge, n_absorb, n_reject, worst);
    CHECK(n_add == p.budget);
    CHECK(n_merge > 0);

    total_remove += n_remove;
    total_reject += n_reject;
    total_absorb += n_absorb;
    CHECK(n_remove + n_merge + n_absorb == m.counters().maintenance);
    if (v.eta < 0.0) CHECK(n_reject == 0);
    CHECK(worst <= 1e-8);
    CHECK(worst_c <= 1e-14);
    CHECK(partner_bad == 0);
    CHECK(group_bad == 0);
    CHECK(over == 0);
    CHECK(m.n_twins() == p.budget);
    CHECK(m.counters().maintenance > 0);
    CHECK(m.twins(0).total_weight() > p.budget);  // merges happened and kept the counts
  }
  CHECK(total_remove > 0 && total_reject > 0 && total_absorb > 0);
}

TEST_CASE("overflow twin merged into a stored twin: count stays B, summed weights, exact machine") {
  for (double eta : {-1.0, 0.2}) {
    TVMParams p = tvm_params(3);
    p.m1 = 100.0;  // every example Beneficial
    p.m2 = inf;    // never remove
    p.rejection_eta = eta;
    p.fixed_C_total = false;
    TwinVectorMachine m(2, 2, p);
    const double pts[3][2] = {{-2.0, 0.0}, {2.0, 0.0}, {0.0, 3.0}};
    const std::int32_t lab[3] = {1, 0, 1};
    for (int i = 0; i < 3; ++i) m.learn_one(pts[i], lab[i]);
    CHECK(m.n_twins() == 3);
    const RowMatrix Q0 = m.twin_points();
    // x next to twin 0 (same label, same side): the best pair of the B + 1 twins is (0, B+1)
    const double x[2] = {-1.9, 0.05};
    double fx = 0.0;
    m.decision(x, &fx);
    const detail::TwinSet& tw = m.twins(0);
    CHECK(tw.fval(0) > 0.0 && fx > 0.0);
    double best_stored = inf;
    for (Index i = 0; i < 3; ++i) best_stored = std::min(best_stored, tw.partner_distortion(i));
    const double d_over = 1.0 * 1.0 * (0.1 * 0.1 + 0.05 * 0.05) / 2.0;  // d* of 4.2.1
    CHECK(d_over < best_stored);
    m.learn_one(x, 1);
    CHECK(m.n_twins() == 3);
    CHECK(m.counters().maintenance == 1 && m.counters().updates == 4);
    CHECK(tw.s_plus(0) == 2.0 && tw.s_minus(0) == 0.0);
    CHECK_NEAR(tw.points()(0, 0), (-2.0 - 1.9) / 2.0, 1e-15);
    CHECK_NEAR(tw.points()(0, 1), 0.025, 1e-15);
    CHECK(tw.points().row(1) == Q0.row(1) && tw.points().row(2) == Q0.row(2));
    CHECK(tw.weight(1) == 1.0 && tw.weight(2) == 1.0);
    CHECK(machine_gap(m.machine(0), scratch_machine(m, 0), probe_points(30, 41)) <= 1e-10);
    CHECK(check_partners(tw) == 0);
  }
}

TEST_CASE("regression: the model keeps changing when every stored pair fails Rejection") {
  // Standardised clean checkerboard, B = 20, C = 100, gamma = 2: before the overflow twin was
  // a candidate, every stored pair failed Rejection after a few thousand examples and the
  // twin set (so the model) never changed again.
  const Index n = 20000;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(0.0, 4.0);
  RowMatrix X(n, 2);
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) {
    X(i, 0) = u(rng), X(i, 1) = u(rng);
    y[static_cast<std::size_t>(i)] = (static_cast<int>(X(i, 0)) + static_cast<int>(X(i, 1))) % 2 == 0 ? 1 : 0;
  }
  for (Index l = 0; l < 2; ++l) {
    const double mu = X.col(l).mean();
    const double sd = std::sqrt((X.col(l).array() - mu).square().mean());
    X.col(l) = (X.col(l).array() - mu) / sd;
  }
  TVMParams p;
  p.kernel = Kernel(KernelType::RBF, 2.0);
  p.budget = 20;
  p.C = 100.0;
  TwinVectorMachine m(2, 2, p);
  m.partial_fit(X.topRows(n / 2), y.data());
  const std::int64_t u_half = m.counters().updates;
  m.partial_fit(X.bottomRows(n / 2), y.data() + n / 2);
  const std::int64_t late = m.counters().updates - u_half;
  std::printf("  updates %lld (second half %lld), labels %lld\n", static_cast<long long>(m.counters().updates),
              static_cast<long long>(late), static_cast<long long>(m.counters().labels));
  CHECK(late > 100);
  CHECK(m.n_twins() == 20);
  CHECK(machine_gap(m.machine(0), scratch_machine(m, 0), probe_points(30, 42)) <= 1e-8);
}

TEST_CASE("tiny budgets: B = 1 (no pair to merge) and B = 2") {
  const Stream s = make_stream(300, 2, 21);
  const RowMatrix P = probe_points(20, 22);
  for (Index B : {1, 2}) {
    for (bool one_sided : {true, false}) {
      TVMParams p = tvm_params(B);
      p.one_sided = one_sided;
      p.C = 5.0;
      TwinVectorMachine m(2, 2, p);
      int bad = 0, absorbed = 0;
      double worst = 0.0;
      for (Index i = 0; i < s.X.rows(); ++i) {
        const double w0 = m.twins(0).total_weight();
        const std::int64_t u0 = m.counters().updates;
        m.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
        const detail::TwinSet& tw = m.twins(0);
        // B = 1: no stored pair, so the overflow twin replaces the twin (|TVM(q)| > m2: weight
        // 1, q = x), is merged into it (the only candidate pair (0, B+1): weight + 1) or ignored
        if (B == 1 && i > 0 && m.counters().updates > u0) {
          if (tw.points().row(0) == s.X.row(i) && tw.total_weight() == 1.0) continue;
          ++absorbed;
          if (tw.total_weight() != w0 + 1.0) ++bad;
        }
        if (i % 5 == 0) worst = std::max(worst, machine_gap(m.machine(0), scratch_machine(m, 0), P));
      }
      CHECK(m.n_twins() == B);
      CHECK(m.twins(0).total_weight() >= 1.0);
      CHECK(machine_gap(m.machine(0), scratch_machine(m, 0), P) <= 1e-8);
      CHECK(worst <= 1e-8);
      CHECK(bad == 0);
      if (B == 1) CHECK(absorbed > 0);
    }
  }
}

TEST_CASE("budget >= stream length: TVM equals IDSVM on the stream") {
  const Stream s = make_stream(150, 2, 9);
  TVMParams p = tvm_params(150);
  TwinVectorMachine m(2, 2, p);
  IncrementalSVM ref(2, p.kernel, p.C);
  const RowMatrix P = probe_points(50, 10);
  double worst = 0.0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    m.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
    ref.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)] == 1 ? 1.0 : -1.0, 1.0);
    if (i % 10 == 9) worst = std::max(worst, max_decision_gap(m.machine(0), ref, P));
  }
  CHECK(worst <= 1e-8);
  CHECK(m.n_twins() == 150);
  CHECK(m.counters().updates == 150);
  CHECK(m.counters().maintenance == 0);
  // every example its own twin, in stream order
  const RowMatrix W = m.twin_weights();
  CHECK((m.twin_points() - s.X).cwiseAbs().maxCoeff() == 0.0);
  for (Index i = 0; i < 150; ++i) CHECK(W(i, 0) == (s.y[static_cast<std::size_t>(i)] == 1 ? 1.0 : 0.0) && W(i, 0) + W(i, 1) == 1.0);
}

TEST_CASE("Random baseline: reservoir sample of the stream, an IDSVM on it") {
  const Stream s = make_stream(400, 2, 11);
  TVMParams p = tvm_params(25);
  p.random_baseline = true;
  p.seed = 77;
  TwinVectorMachine m(2, 2, p);
  // reference reservoir (Algorithm R with the library's portable index draws)
  std::mt19937_64 rng(p.seed);
  std::vector<Index> slot_of(25, -1);
  const RowMatrix P = probe_points(30, 12);
  double worst = 0.0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    m.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
    const Index t = i + 1;
    if (t <= 25) {
      slot_of[static_cast<std::size_t>(i)] = i;
    } else {
      const Index j = detail::uniform_index(rng, t);
      if (j < 25) slot_of[static_cast<std::size_t>(j)] = i;
    }
    const detail::TwinSet& tw = m.twins(0);
    for (Index j = 0; j < tw.size(); ++j) {
      const Index e = slot_of[static_cast<std::size_t>(j)];
      CHECK(tw.points().row(j) == s.X.row(e));
      CHECK(tw.s_plus(j) == (s.y[static_cast<std::size_t>(e)] == 1 ? 1.0 : 0.0) && tw.weight(j) == 1.0);
    }
    if (i % 20 == 19) worst = std::max(worst, machine_gap(m.machine(0), scratch_machine(m, 0), P));
  }
  CHECK(worst <= 1e-8);
  CHECK(m.n_twins() == 25);
  CHECK(m.current_C(0) == p.C);
  // a different seed keeps a different sample
  TVMParams p2 = p;
  p2.seed = 78;
  TwinVectorMachine m2(2, 2, p2);
  m2.partial_fit(s.X, s.y.data());
  CHECK(!(m2.twin_points() == m.twin_points()));
}

TEST_CASE("multi-class: machine k equals a binary TVM on the class-k-versus-rest stream") {
  const Stream s = make_stream(250, 3, 13);
  TVMParams p = tvm_params(10);
  TwinVectorMachine m(2, 3, p);
  m.partial_fit(s.X, s.y.data());
  const RowMatrix P = probe_points(20, 14);
  for (Index k = 0; k < 3; ++k) {
    std::vector<std::int32_t> yk(s.y.size());
    for (std::size_t i = 0; i < yk.size(); ++i) yk[i] = s.y[i] == k ? 1 : 0;
    TwinVectorMachine b(2, 2, p);
    b.partial_fit(s.X, yk.data());
    CHECK(max_decision_gap(m.machine(k), b.machine(0), P) == 0.0);
    CHECK(m.twins(k).size() == b.n_twins());
  }
  CHECK(m.n_twins() == m.n_twins(0) + m.n_twins(1) + m.n_twins(2));
  const RowMatrix W = m.twin_weights();
  CHECK(W.rows() == m.n_twins() && W.cols() == 6);
  // rows of machine 1 carry weights only in columns 2, 3
  const Index r0 = m.n_twins(0);
  for (Index j = 0; j < m.n_twins(1); ++j)
    CHECK(W(r0 + j, 0) == 0.0 && W(r0 + j, 4) == 0.0 && W(r0 + j, 2) + W(r0 + j, 3) >= 1.0);
  // decision = the machines' values; prediction = argmax
  RowMatrix D(P.rows(), 3);
  m.decision_function(P, D);
  for (Index i = 0; i < P.rows(); ++i)
    for (Index k = 0; k < 3; ++k) CHECK(D(i, k) == m.machine(k).decision(P.row(i).data()));
}

TEST_CASE("ridge: machines on K + ridge I equal an IDSVM with that ridge on the twins; resumes bitwise") {
  const Stream s = make_stream(600, 2, 23);
  const RowMatrix P = probe_points(30, 24);
  for (bool random : {false, true}) {
    TVMParams p = tvm_params(12);
    p.ridge = 1e-3;
    p.random_baseline = random;
    p.seed = 9;
    TwinVectorMachine m(2, 2, p), first(2, 2, p);
    CHECK(m.machine(0).ridge() == 1e-3);
    double worst = 0.0, worst_f = 0.0;
    for (Index i = 0; i < s.X.rows(); ++i) {
      m.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
      if (i % 5 == 0 || i + 1 == s.X.rows()) worst = std::max(worst, machine_gap(m.machine(0), scratch_machine(m, 0), P));
      // TVM(q_j) (from the machine's g, without the ridge term) is the plain decision value
      const detail::TwinSet& tw = m.twins(0);
      if (!random)
        for (Index j = 0; j < tw.size(); ++j)
          worst_f = std::max(worst_f, std::fabs(m.machine(0).decision(tw.points().row(j).data()) - tw.fval(j)));
    }
    std::printf("  ridge 1e-3 random=%d: gap to scratch IDSVM %.2e, |TVM(q_j) - f(q_j)| %.2e\n", random, worst, worst_f);
    CHECK(worst <= 1e-8);
    CHECK(worst_f <= 1e-8);
    CHECK(m.counters().maintenance > 0 || random);
    first.partial_fit(s.X.topRows(300), s.y.data());
    FieldMap fm;
    first.save(fm);
    CHECK(fm.get_f64("tvm.ridge") == 1e-3);
    TwinVectorMachine resumed;
    resumed.load(FieldMap::from_bytes(fm.to_bytes()));
    CHECK(resumed.params().ridge == 1e-3);
    resumed.partial_fit(s.X.bottomRows(300), s.y.data() + 300);
    CHECK(same_bytes(m, resumed));
    auto loads = [](const FieldMap& f) {
      TwinVectorMachine t;
      t.load(f);
      return t.n_twins();
    };
    FieldMap f = fm;
    f.set("tvm.ridge", 0.0);  // the machines were trained with 1e-3
    CHECK_THROWS(loads(f));
    f.set("tvm.ridge", -1.0);
    CHECK_THROWS(loads(f));
  }
  // ridge 0 (the default) writes 0 and is the exact machine
  TwinVectorMachine z(2, 2, tvm_params(8));
  z.partial_fit(s.X.topRows(100), s.y.data());
  FieldMap fz;
  z.save(fz);
  CHECK(fz.get_f64("tvm.ridge") == 0.0 && z.machine(0).ridge() == 0.0);
}

TEST_CASE("invalid parameters raise") {
  auto make = [](TVMParams p) {
    TwinVectorMachine m(2, 2, p);
    return m.n_twins();
  };
  CHECK(make(TVMParams()) == 0);
  TVMParams p;
  p.m2 = p.m1;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.m2 = 0.5;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.budget = 0;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.C = 0.0;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.C = inf;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.m1 = -0.1;
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.m1 = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.m2 = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.rejection_eta = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.merge = static_cast<TVMMerge>(3);
  CHECK_THROWS(make(p));
  p = TVMParams();
  p.ridge = -1e-9;
  CHECK_THROWS(make(p));
  p.ridge = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS(make(p));
  p.ridge = inf;
  CHECK_THROWS(make(p));
  p.ridge = 1e-6;
  CHECK(make(p) == 0);
  p = TVMParams();
  CHECK_THROWS(TwinVectorMachine(0, 2, p));
  CHECK_THROWS(TwinVectorMachine(2, 1, p));
  p.m2 = inf;  // never remove: allowed
  CHECK(make(p) == 0);
}

TEST_MAIN()
