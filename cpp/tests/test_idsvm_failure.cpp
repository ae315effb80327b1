// The strong exception guarantee of IncrementalSVM and IncrementalSVC: natural breakdowns and
// forced failures at every bookkeeping step undone bit for bit, transactions, one-vs-rest
// machines rolled back together, C or ridge beyond the kernel's scale refused.
#include <budgetkernel/budgetkernel.hpp>
#include <budgetkernel/learners/incremental_svc.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>
#include <budgetkernel/svm/incremental_svm.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "test_forced_failure.hpp"
#include "test_idsvm_fixtures.hpp"
#include "test_util.hpp"

using namespace budgetkernel;
using namespace idsvm_test;

TEST_CASE("strong guarantee: a learn that breaks down (rank-deficient kernel, ridge 0) is undone bit for bit") {
  // The stream of the rank-deficient case of test_idsvm_ridge.cpp (RBF gamma 0.01, C = 1e5): some learns throw.
  const Kernel k(KernelType::RBF, 0.01);
  const double C = 1e5;
  const Data s = blobs(400, 0);
  IncrementalSVM m(2, k, C);
  std::vector<Index> failed;
  std::int64_t learned = 0, learned_after_failure = 0;
  int restored = 0, undone_msg = 0, kt_after = 0, next_key_ok = 0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    const MachineState before = state_of(m);
    try {
      const std::int64_t key = m.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
      next_key_ok += key == learned;  // a failed learn consumed no key
      ++learned;
      learned_after_failure += failed.empty() ? 0 : 1;
    } catch (const std::runtime_error& e) {
      failed.push_back(i);
      restored += state_of(m) == before;
      undone_msg += contains(e.what(), "undone");
      // the machine is still the verified solution of the examples it kept
      kt_after += m.kkt_violation() < 1e-6;
    }
  }
  const int nf = static_cast<int>(failed.size());
  std::printf("  rank-deficient stream: %d of 400 learns broke down (first at %ld), %ld learned after the first\n", nf,
              failed.empty() ? -1L : static_cast<long>(failed[0]), static_cast<long>(learned_after_failure));
  CHECK(nf >= 1);
  CHECK(restored == nf);
  CHECK(undone_msg == nf);
  CHECK(kt_after == nf);
  CHECK(next_key_ok == learned);
  CHECK(learned_after_failure >= 50);  // still usable
  CHECK(m.kkt_violation() < 1e-6);
  // A machine that never saw the failing examples is the same machine, bit for bit.
  IncrementalSVM ref(2, k, C);
  int ref_throws = 0;
  for (Index i = 0; i < s.X.rows(); ++i) {
    if (std::find(failed.begin(), failed.end(), i) != failed.end()) continue;
    try {
      ref.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]);
    } catch (const std::runtime_error&) {
      ++ref_throws;
    }
  }
  CHECK(ref_throws == 0);
  CHECK(state_of(ref) == state_of(m));
  // set_C to 10 C breaks down as well and is undone.
  const MachineState before = state_of(m);
  const auto try_set_C = [](IncrementalSVM& machine, double c) {
    try {
      machine.set_C(c);
      return true;
    } catch (const std::runtime_error&) {
      return false;
    }
  };
  CHECK(!try_set_C(m, 10.0 * C));
  CHECK(state_of(m) == before);
  // A smaller C does on it what it does on the reference, bit for bit: on x86-64 it succeeds.
  // On aarch64 (other rounding) that path, still ill-conditioned at gamma 0.01, cycles through
  // zero-length pivot swaps until the step limit; then both throw and stay as they were.
  const bool done = try_set_C(m, 1e3);
  CHECK(try_set_C(ref, 1e3) == done);
#if defined(__x86_64__) || defined(_M_X64)
  CHECK(done);
#endif
  CHECK(state_of(m) == state_of(ref));
  CHECK(m.kkt_violation() < 1e-8);
  std::printf("  set_C(1e3) afterwards: %s\n", done ? "succeeded" : "threw (undone)");
}

TEST_CASE("strong guarantee: forced failures at every bookkeeping step of learn, unlearn, set_weight, set_C") {
  // Every operation of a random sequence is first made to fail at its 1st, 2nd, ... bookkeeping
  // step (test hook) until it completes; each failure must leave the machine bitwise as before,
  // and the machine must equal, after every operation, a reference that never failed.
  const char* names[4] = {"learn", "unlearn", "set_weight", "set_C"};
  for (const Kernel& k : kernels) {
    const Data s = make_data(90, 3, 77, true, 0.7);
    IncrementalSVM m(3, k, 1.0), ref(3, k, 1.0);
    std::mt19937_64 rng(5);
    std::vector<std::int64_t> keys;
    Index next = 0;
    int forced[4] = {0, 0, 0, 0}, not_restored = 0, bad_message = 0, differ = 0, kt = 0;
    for (int op = 0; op < 150; ++op) {
      const unsigned r = static_cast<unsigned>(rng() % 10);
      int type = next < 20 || r < 5 ? 0 : r < 7 ? 1 : r < 9 ? 2 : 3;
      if (type == 0 && next >= s.X.rows()) type = 1;
      const std::int64_t key = keys.empty() ? 0 : keys[static_cast<std::size_t>(rng() % keys.size())];
      const double weight = 0.2 + 0.5 * static_cast<double>(rng() % 8), C = 0.05 * static_cast<double>(1 + rng() % 80);
      auto apply = [&](IncrementalSVM& x) {
        switch (type) {
          case 0: return x.learn(s.X.row(next).data(), s.y[static_cast<std::size_t>(next)], s.w[static_cast<std::size_t>(next)]);
          case 1: x.unlearn(key); break;
          case 2: x.set_weight(key, weight); break;
          default: x.set_C(C); break;
        }
        return std::int64_t{-1};
      };
      for (std::int64_t step = 1;; ++step) {
        const MachineState before = state_of(m);
        std::string what;
        if (!bk_test::forced_failure(step, [&] { apply(m); }, &what)) break;
        ++forced[type];
        not_restored += !(state_of(m) == before);
        bad_message += !contains(what, "forced failure") || !contains(what, names[type] == std::string("set_weight") ? "learn/set_weight" : names[type]);
      }
      const std::int64_t got = apply(ref);
      if (type == 0) {
        keys.push_back(got);
        ++next;
      } else if (type == 1) {
        keys.erase(std::find(keys.begin(), keys.end(), key));
      }
      differ += !(state_of(m) == state_of(ref));
      kt += check_kkt(m, "after forced failures");
    }
    std::printf("  %s: forced failures learn %d, unlearn %d, set_weight %d, set_C %d\n",
                k.type() == KernelType::RBF ? "rbf" : k.type() == KernelType::Linear ? "linear" : "poly", forced[0],
                forced[1], forced[2], forced[3]);
    for (int t = 0; t < 4; ++t) CHECK(forced[t] >= 3);
    CHECK(not_restored == 0);
    CHECK(bad_message == 0);
    CHECK(differ == 0);
    CHECK(kt == 0);
  }
}

TEST_CASE("transactions: rollback undoes several operations bit for bit, commit keeps them") {
  const Data s = make_data(70, 2, 12, true, 0.8);
  IncrementalSVM m(2, kernels[0], 1.0);
  for (Index i = 0; i < 40; ++i) m.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)], s.w[static_cast<std::size_t>(i)]);
  // pushes, erases (fast path and after a path), weights (with and without a path), C, and an
  // example learned and unlearned inside the same transaction
  auto ops = [&](IncrementalSVM& x) {
    for (Index i = 40; i < 50; ++i) x.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)], s.w[static_cast<std::size_t>(i)]);
    for (std::int64_t key : {3, 7, 11, 44}) x.unlearn(key);
    x.set_weight(10, 2.5);
    x.set_weight(12, 0.3);
    x.set_C(3.0);
    for (Index i = 50; i < 55; ++i) x.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)], s.w[static_cast<std::size_t>(i)]);
    x.unlearn(0);
  };
  const MachineState before = state_of(m);
  IncrementalSVM plain = m;
  ops(plain);
  m.begin_transaction();
  CHECK(m.in_transaction());
  CHECK_THROWS(m.begin_transaction());
  const IncrementalSVM copy = m;
  CHECK(!copy.in_transaction());  // a copy starts without one
  ops(m);
  CHECK(state_of(m) == state_of(plain));
  m.rollback();
  CHECK(!m.in_transaction());
  CHECK(state_of(m) == before);
  m.rollback();  // no-op without a transaction
  CHECK(state_of(m) == before);
  // an operation failing inside a transaction leaves it to rollback()
  m.begin_transaction();
  ops(m);
  CHECK(bk_test::forced_failure(2, [&] { m.set_C(0.2); }));
  CHECK(m.in_transaction());
  m.rollback();
  CHECK(state_of(m) == before);
  // the keys go on where they were: the rolled-back learns consumed none
  CHECK(m.learn(s.X.row(60).data(), 1.0) == 40);
  // commit keeps the changes: the same machine as without a transaction
  IncrementalSVM a = plain, b = plain;
  a.begin_transaction();
  a.set_C(0.5);
  a.unlearn(20);
  a.commit();
  CHECK(!a.in_transaction());
  b.set_C(0.5);
  b.unlearn(20);
  CHECK(state_of(a) == state_of(b));
}

TEST_CASE("transactions: random sequences of operations roll back bit for bit (Q_{:,S} journaled write by write)") {
  // Q_{:,S} is restored by undoing its writes in reverse order (one save per column while the
  // rows stay put), not from a copy. Random transactions mix pushes, erases and the paths'
  // column writes in every order (a learn after an erase reuses the erased rows, a column
  // written before and after an erase is saved twice); the last of each is made to fail at a
  // random bookkeeping step half of the time. The rollback must give back the machine before
  // the transaction, and a committed one must equal the same operations without a transaction.
  int rolled = 0, committed = 0, failed = 0, differ = 0, migrations = 0;
  for (const Kernel& k : kernels) {
    const Data s = make_data(400, 3, 91, true, 0.6);
    IncrementalSVM m(3, k, 2.0);
    std::vector<std::int64_t> keys;
    Index next = 0;
    for (; next < 40; ++next) keys.push_back(m.learn(s.X.row(next).data(), s.y[static_cast<std::size_t>(next)], s.w[static_cast<std::size_t>(next)]));
    std::mt19937_64 rng(17);
    for (int tx = 0; tx < 80 && next < s.X.rows() - 16; ++tx) {
      const MachineState before = state_of(m);
      const std::int64_t steps_before = m.n_steps();
      IncrementalSVM plain = m, untouched = m;
      std::vector<std::int64_t> live = keys;
      Index at = next;
      const int n_ops = 3 + static_cast<int>(rng() % 12);
      const bool fail_last = rng() % 2 == 0;
      m.begin_transaction();
      bool threw = false;
      for (int op = 0; op < n_ops && !threw; ++op) {
        const unsigned r = static_cast<unsigned>(rng() % 10);
        const std::int64_t key = live[static_cast<std::size_t>(rng() % live.size())];
        const double weight = 0.2 + 0.4 * static_cast<double>(rng() % 8), C = 0.1 * static_cast<double>(1 + rng() % 60);
        auto apply = [&](IncrementalSVM& x) {
          if (r < 4) {
            x.learn(s.X.row(at).data(), s.y[static_cast<std::size_t>(at)], s.w[static_cast<std::size_t>(at)]);
          } else if (r < 7 && live.size() > 10) {
            x.unlearn(key);
          } else if (r < 9) {
            x.set_weight(key, weight);
          } else {
            x.set_C(C);
          }
        };
        if (op == n_ops - 1 && fail_last) {
          threw = bk_test::forced_failure(1 + static_cast<std::int64_t>(rng() % 4), [&] { apply(m); });
          failed += threw;
        } else {
          apply(m);
        }
        if (threw) break;
        apply(plain);
        if (r < 4) live.push_back(at++);
        else if (r < 7 && live.size() > 10) live.erase(std::find(live.begin(), live.end(), key));
      }
      migrations += static_cast<int>(m.n_steps() - steps_before);
      if (threw || rng() % 2 == 0) {
        m.rollback();
        differ += !(state_of(m) == before);
        // and it goes on as a machine that never saw the transaction (derived state such as
        // Q_SS, which save() does not write, must be back too)
        const auto learn_next = [&](IncrementalSVM& x) {
          return x.learn(s.X.row(next).data(), s.y[static_cast<std::size_t>(next)], s.w[static_cast<std::size_t>(next)]);
        };
        keys.push_back(learn_next(m));
        learn_next(untouched);
        ++next;
        differ += !(state_of(m) == state_of(untouched));
        ++rolled;
      } else {
        m.commit();
        differ += !(state_of(m) == state_of(plain));
        keys = live;
        next = at;
        ++committed;
      }
    }
  }
  std::printf("  random transactions: %d rolled back (%d after a forced failure), %d committed, %d bookkeeping steps\n",
              rolled, failed, committed, migrations);
  CHECK(rolled >= 20);
  CHECK(committed >= 10);
  CHECK(failed >= 5);
  CHECK(differ == 0);
}

TEST_CASE("IncrementalSVC: a failure in machine 1 or 2 rolls every machine back (step, unlearn, set_weight, set_C)") {
  const Stream s = make_stream(100, 3, 611);
  IncrementalSVC l(2, 3, svc_params()), ref(2, 3, svc_params());
  l.partial_fit(s.X.topRows(40), s.y.data());
  ref.partial_fit(s.X.topRows(40), s.y.data());
  // op(l) with machine `target` failing at its first bookkeeping step (the steps of the machines
  // before it counted on a copy). Returns false, leaving l alone, when machine target would run
  // no step for op.
  int not_restored = 0, earlier_learned = 0;
  auto fail_in = [&](Index target, auto&& op) {
    IncrementalSVC probe = l;
    op(probe);
    if (probe.machine(target).n_steps() == l.machine(target).n_steps()) return false;
    std::int64_t before_target = 0;
    for (Index j = 0; j < target; ++j) before_target += probe.machine(j).n_steps() - l.machine(j).n_steps();
    earlier_learned += probe.machine(0).size() != l.machine(0).size() || probe.machine(0).bias() != l.machine(0).bias();
    const std::string before = bytes_of(l);
    std::vector<Index> sizes;
    for (Index j = 0; j < 3; ++j) sizes.push_back(l.machine(j).size());
    CHECK(bk_test::forced_failure(before_target + 1, [&] { op(l); }));
    not_restored += bytes_of(l) != before;
    for (Index j = 0; j < 3; ++j) not_restored += l.machine(j).size() != sizes[static_cast<std::size_t>(j)];
    return true;
  };
  int failed[4] = {0, 0, 0, 0};
  std::vector<std::int64_t> learned;  // example numbers
  for (Index i = 40; i < 100; ++i) {
    const Index target = 1 + (i % 2);
    auto step = [&](IncrementalSVC& x) { x.learn_one(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]); };
    if (failed[0] < 6 && fail_in(target, step)) {
      ++failed[0];
      continue;  // never learned: ref does not see it either
    }
    step(l);
    step(ref);
    learned.push_back(static_cast<std::int64_t>(learned.size()) + 40);
  }
  for (std::size_t t = 0; t < learned.size(); t += 3) {
    const std::int64_t e = learned[t];
    const Index target = 1 + static_cast<Index>(t % 2);
    auto unl = [&](IncrementalSVC& x) { x.unlearn(e); };
    auto wgt = [&](IncrementalSVC& x) { x.set_weight(e, 4.0); };
    if (fail_in(target, unl)) ++failed[1];
    if (fail_in(target, wgt)) ++failed[2];
  }
  for (double C : {0.3, 5.0})
    for (Index target : {1, 2})
      if (fail_in(target, [&](IncrementalSVC& x) { x.set_C(C); })) ++failed[3];
  std::printf("  IncrementalSVC forced failures in machine 1 / 2: step %d, unlearn %d, set_weight %d, set_C %d\n", failed[0],
              failed[1], failed[2], failed[3]);
  CHECK(failed[0] == 6);
  CHECK(failed[1] >= 3 && failed[2] >= 3 && failed[3] == 4);
  CHECK(earlier_learned >= 6);  // machine 0 had applied the operation before machine 1 or 2 failed
  CHECK(not_restored == 0);
  // the learner went on as one that never saw the failed operations
  CHECK(bytes_of(l) == bytes_of(ref));
  for (Index k = 0; k < 3; ++k) CHECK(check_kkt(l.machine(k), "IncrementalSVC after failures") == 0);
  l.set_C(0.7);
  ref.set_C(0.7);
  l.unlearn(learned[1]);
  ref.unlearn(learned[1]);
  CHECK(bytes_of(l) == bytes_of(ref));
}

TEST_CASE("IncrementalSVC: a chunk that breaks down keeps the examples before the failing one and says how many") {
  const Stream s = as_stream(blobs(400, 0));  // the rank-deficient case: RBF gamma 0.01, C = 1e5
  IDSVMParams p;
  p.kernel = Kernel(KernelType::RBF, 0.01);
  p.C = 1e5;
  for (bool weighted : {false, true}) {
    IncrementalSVC l(2, 2, p);
    std::string what;
    try {
      if (weighted)
        l.partial_fit_weighted(s.X, s.y.data(), s.w.data());
      else
        l.partial_fit(s.X, s.y.data());
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    const std::int64_t j = l.counters().examples;
    std::printf("  %s: %.160s...\n", weighted ? "weighted" : "plain", what.c_str());
    CHECK(j > 0 && j < 400);
    CHECK(contains(what, weighted ? "IncrementalSVC::partial_fit_weighted: example " : "IncrementalSVC::partial_fit: example "));
    CHECK(contains(what, "example " + std::to_string(j) + " of the chunk"));
    CHECK(contains(what, "the " + std::to_string(j) + " examples before it stay learned"));
    CHECK(contains(what, "numerical breakdown"));
    IncrementalSVC r(2, 2, p);
    r.partial_fit(s.X.topRows(j), s.y.data());
    CHECK(bytes_of(l) == bytes_of(r));
    CHECK(l.counters().mistakes == r.counters().mistakes && l.counters().labels == j);
  }
}

// C x weight x max(k(x, x) + ridge) >= 1e14: with S empty only b moves, every example's g moves
// at rate 1, below the path's noise threshold (1e-14 of that scale): "empty margin set ... |S| = 0"
// on the first example, which did not say that C was at fault. Now a std::invalid_argument
// (ValueError in Python) naming C or the ridge and the limit; the operation is undone.
TEST_CASE("C or ridge too large for the kernel's scale: invalid_argument naming it, up front for RBF, undone") {
  const auto message_of = [](auto&& f) {
    try {
      f();
    } catch (const detail::IDSVMScaleError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("wrong type: ") + e.what();
    }
    return std::string("no exception");
  };
  const auto has = [](const std::string& m, const char* part) { return m.find(part) != std::string::npos; };
  const Kernel rbf(KernelType::RBF, 0.5), lin(KernelType::Linear);
  // Up front (RBF: k(x, x) = 1): exactly where the first example of weight 1 fails.
  std::string m = message_of([&] { IncrementalSVM::check_scale(rbf, 1e14, 0.0); });
  CHECK(has(m, "C = 1e+14 is too large") && has(m, "< 1e+14") && has(m, "checked up front"));
  m = message_of([&] { IncrementalSVM::check_scale(rbf, 1.0, 1e20); });
  CHECK(has(m, "ridge = 1e+20 is too large") && has(m, "at most ~1e6 times"));
  CHECK(message_of([&] { IncrementalSVM::check_scale(rbf, 9e13, 0.0); }) == "no exception");
  CHECK(message_of([&] { IncrementalSVM::check_scale(lin, 1e20, 0.0); }) == "no exception");  // data-dependent
  const Data s = make_data(60, 2, 77, false, 1.0);
  for (double C : {1e14, 9e13}) {
    IncrementalSVM a(2, rbf, C);
    const std::string before = [&] { FieldMap f; a.save(f, "m."); return f.to_bytes(); }();
    m = message_of([&] { a.learn(s.X.row(0).data(), s.y[0]); });
    if (C >= 1e14) {
      CHECK(has(m, "IncrementalSVM::learn/set_weight: C = 1e+14 is too large for the kernel's scale"));
      FieldMap f;
      a.save(f, "m.");
      CHECK(f.to_bytes() == before && a.size() == 0);  // undone, and no key handed out
    } else {
      CHECK(m == "no exception");  // the largest C below the limit learns (the results are unchanged)
    }
  }
  // Linear kernel: k(x, x) = |x|^2 is known only with the example; the first one fails, naming C.
  {
    IncrementalSVM a(2, lin, 1e11);
    const double x[2] = {300.0, 400.0};  // k(x, x) = 2.5e5: 2.5e16 >= 1e14
    m = message_of([&] { a.learn(x, 1.0); });
    CHECK(has(m, "C = 1e+11 is too large for the kernel's scale") && has(m, "scaling the features"));
    const double xs[2] = {0.3, 0.4};
    CHECK(message_of([&] { a.learn(xs, 1.0); }) == "no exception");
  }
  // A huge weight: the same limit (C x weight).
  {
    IncrementalSVM a(2, rbf, 1e7);
    m = message_of([&] { a.learn(s.X.row(0).data(), s.y[0], 1e8); });
    CHECK(has(m, "C = 1e+07 is too large") && has(m, "x 1e+08 x 1 ="));
  }
  // A ridge below the limit but far above k(x, x): J is numerically singular at a refactorisation.
  for (double ridge : {1e8, 1e13}) {
    IncrementalSVM a(2, rbf, 1.0, ridge);
    m = "no exception";
    for (Index i = 0; i < s.X.rows() && m == "no exception"; ++i)
      m = message_of([&] { a.learn(s.X.row(i).data(), s.y[static_cast<std::size_t>(i)]); });
    CHECK(has(m, "is too large for the kernel's scale (max k(x, x) = 1)") && has(m, "at most ~1e6 times"));
  }
  // The learners: the chunk report keeps the type and says how many examples stayed learned.
  {
    IncrementalSVC l(2, 2, svc_params(1e14));
    std::vector<std::int32_t> y(10);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = s.y[i] > 0 ? 1 : 0;
    m = message_of([&] { l.partial_fit(s.X.topRows(10), y.data()); });
    CHECK(has(m, "IncrementalSVC::partial_fit: example 0 of the chunk") && has(m, "C = 1e+14 is too large"));
    CHECK(l.counters().examples == 0);
    TVMParams p;
    p.kernel = rbf;
    p.C = 1e15;
    TwinVectorMachine t(2, 2, p);
    m = message_of([&] { t.partial_fit(s.X.topRows(10), y.data()); });
    CHECK(has(m, "TwinVectorMachine::partial_fit: example 0 of the chunk") && has(m, "C = 1e+15 is too large"));
    CHECK(t.counters().examples == 0);
  }
}

TEST_MAIN()
