// Stopping a chunk between examples (stop_poll.hpp): a learner stopped before example k is
// exactly the learner trained on the first k examples, and resuming it with the rest gives the
// uninterrupted model. The exact SVMs' failure reports let the stop pass unchanged.
#include <budgetkernel/budgetkernel.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

// A callback that says stop on its `at`-th call (1-based) and counts its calls.
struct StopAt {
  int at;
  int calls = 0;
  static bool call(void* self) {
    auto* s = static_cast<StopAt*>(self);
    return ++s->calls == s->at;
  }
};

// Rows [a, b) of a stream as a chunk with its labels.
template <class L>
void learn_rows(L& learner, const bk_test::Stream& s, Index a, Index b, StopPoll* stop = nullptr) {
  learner.partial_fit(s.X.middleRows(a, b - a), s.y.data() + a, nullptr, stop);
}

// Stops `make()`'s learner before example k of an n-example chunk (interval 0: the callback
// runs before every example), and checks it against learners that never stopped.
template <class Make>
void check_stop_equals_prefix(Make make, int n_classes) {
  const Index n = 60, k = 23;
  const bk_test::Stream s = bk_test::noisy_board(n, n_classes, 7, 0.1);
  auto stopped = make();
  StopAt at{static_cast<int>(k) + 1};
  StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
  Index done = -1;
  try {
    learn_rows(stopped, s, 0, n, &poll);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(done == k);
  CHECK(stopped.counters().examples == k);

  auto prefix = make();
  learn_rows(prefix, s, 0, k);
  CHECK(bk_test::bytes_of(stopped) == bk_test::bytes_of(prefix));

  auto whole = make();
  learn_rows(whole, s, 0, n);
  learn_rows(stopped, s, k, n);  // resume with the rest
  CHECK(bk_test::bytes_of(stopped) == bk_test::bytes_of(whole));
}

}  // namespace

TEST_CASE("a stopped partial_fit is the learner of the rows before the stop, and resumes exactly") {
  for (int c : {2, 3}) {
    check_stop_equals_prefix(
        [c] {
          BSGDParams p;
          p.kernel = Kernel(KernelType::RBF, 1.0);
          p.budget = 10;
          return KernelPegasos(2, c, p);
        },
        c);
    check_stop_equals_prefix(
        [c] {
          PAParams p;
          p.budget = 8;
          return PassiveAggressive(2, c, p);
        },
        c);
    check_stop_equals_prefix([c] { return IncrementalSVC(2, c, IDSVMParams{}); }, c);
    check_stop_equals_prefix(
        [c] {
          TVMParams p;
          p.budget = 6;
          return TwinVectorMachine(2, c, p);
        },
        c);
  }
}

TEST_CASE("the weighted SVM chunk stops like partial_fit; the stop is not a reported failure") {
  const bk_test::Stream s = bk_test::noisy_board(40, 2, 3, 0.1);
  const Vector w = Vector::Constant(40, 2.0);
  IncrementalSVC stopped(2, 2, IDSVMParams{}), prefix(2, 2, IDSVMParams{});
  StopAt at{11};
  StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
  bool interrupted = false;
  try {
    stopped.partial_fit_weighted(s.X, s.y.data(), w.data(), nullptr, &poll);
  } catch (const Interrupted& e) {  // not rewritten into the runtime_error of a failed example
    interrupted = e.done() == 10;
  }
  CHECK(interrupted);
  prefix.partial_fit_weighted(s.X.topRows(10), s.y.data(), w.data());
  CHECK(bk_test::bytes_of(stopped) == bk_test::bytes_of(prefix));
}

TEST_CASE("set_C, unlearn and set_weight stop between bookkeeping steps and leave every machine as before") {
  for (int c : {2, 3}) {
    const bk_test::Stream s = bk_test::noisy_board(300, c, 5, 0.15);
    IDSVMParams p;
    p.C = 1.0;
    IncrementalSVC svc(2, c, p);
    svc.partial_fit(s.X, s.y.data());
    const std::string before = bk_test::bytes_of(svc);
    // Which example has alpha > 0 in machine 0 (its unlearning runs a path).
    std::int64_t sv = -1;
    for (Index i = 0; i < 300 && sv < 0; ++i)
      if (svc.machine(0).alpha(svc.machine(0).index_of(i)) > 0.0) sv = i;
    CHECK(sv >= 0);
    const std::function<void(StopPoll*)> ops[] = {
        [&](StopPoll* stop) { svc.set_C(100.0, stop); },
        [&](StopPoll* stop) { svc.unlearn(sv, stop); },
        [&](StopPoll* stop) { svc.set_weight(sv, 0.01, stop); },
    };
    for (const auto& op : ops) {
      StopAt at{3};  // after two steps of the path: the operation was under way
      StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
      Index done = -1;
      try {
        op(&poll);
      } catch (const Interrupted& e) {
        done = e.done();
      }
      CHECK(done == 0 && at.calls == 3);
      CHECK(bk_test::bytes_of(svc) == before);
    }
    // Unstopped, the same operation still runs to the end, as on a learner never stopped.
    IncrementalSVC fresh(2, c, p);
    fresh.partial_fit(s.X, s.y.data());
    svc.set_C(100.0);
    fresh.set_C(100.0);
    CHECK(bk_test::bytes_of(svc) == bk_test::bytes_of(fresh));
    CHECK(svc.params().C == 100.0);
  }
}

TEST_CASE("decision_function and predict stop too (also a loaded Model's), and leave the learner unchanged") {
  const bk_test::Stream s = bk_test::noisy_board(50, 3, 5, 0.0);
  BSGDParams p;
  p.budget = 10;
  KernelPegasos l(2, 3, p);
  learn_rows(l, s, 0, 50);
  const std::string before = bk_test::bytes_of(l);
  RowMatrix D(50, 3);
  std::vector<std::int32_t> out(50);
  for (int which = 0; which < 2; ++which) {
    StopAt at{5};
    StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
    Index done = -1;
    try {
      if (which == 0)
        l.decision_function(s.X, D, &poll);
      else
        l.predict(s.X, out.data(), &poll);
    } catch (const Interrupted& e) {
      done = e.done();
    }
    CHECK(done == 4);
  }
  CHECK(bk_test::bytes_of(l) == before);

  const Model m(FieldMap::from_bytes(before));  // a loaded model's predictions stop the same way
  StopAt at{8};
  StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
  Index done = -1;
  try {
    (void)m.decision_function(s.X, &poll);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(done == 7);
  CHECK(m.decision_function(s.X).isApprox(l.decision_function(s.X), 0.0));
}

TEST_CASE("active_run (ramp-loss PA's label-free rows) stops too") {
  const bk_test::Stream s = bk_test::noisy_board(3000, 2, 9, 0.0);
  PAParams p;
  p.loss = PALoss::Ramp;
  PassiveAggressive l(2, 2, p);
  learn_rows(l, s, 0, 2000);
  // A start whose run of rows that need no label is at least 4 long (the trained learner
  // skips most rows), found on copies.
  Index start = 2000;
  while (start < 2990) {
    PassiveAggressive copy = l;
    if (copy.active_run(s.X, start, nullptr) >= start + 4) break;
    ++start;
  }
  CHECK(start < 2990);
  const std::int64_t seen = l.counters().examples;
  StopAt at{4};
  StopPoll poll(&StopAt::call, &at, std::chrono::nanoseconds(0));
  Index done = -1;
  try {
    l.active_run(s.X, start, nullptr, &poll);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(done == 3);
  CHECK(l.counters().examples == seen + 3);  // the three rows observed before the stop
}

TEST_CASE("the default poll leaves short calls alone and reaches long ones") {
  // A chunk far shorter than the 20 ms interval never calls back.
  const bk_test::Stream s = bk_test::noisy_board(20, 2, 1, 0.0);
  StopAt never{1};
  StopPoll quiet(&StopAt::call, &never);
  BSGDParams p;
  p.budget = 10;
  KernelPegasos l(2, 2, p);
  learn_rows(l, s, 0, 20, &quiet);
  CHECK(never.calls == 0);

  // An unbudgeted learner over 20,000 examples runs for a good fraction of a second
  // (O(n^2) kernel values); a 1 ms poll stops it long before its end.
  const bk_test::Stream big = bk_test::noisy_board(20000, 2, 2, 0.15);
  StopAt first{1};
  StopPoll poll(&StopAt::call, &first, std::chrono::milliseconds(1));
  BSGDParams unbudgeted;
  unbudgeted.budget = 0;
  KernelPegasos slow(2, 2, unbudgeted);
  Index done = -1;
  try {
    learn_rows(slow, big, 0, 20000, &poll);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(first.calls == 1);
  CHECK(done > 0 && done < 20000);
  CHECK(slow.counters().examples == done);
}

TEST_CASE("StopPoll refuses a null callback and a negative interval") {
  CHECK_THROWS(StopPoll(nullptr));
  CHECK_THROWS(StopPoll(&StopAt::call, nullptr, std::chrono::milliseconds(-1)));
}

TEST_MAIN()
