// run_tasks (parallel.hpp): learners trained as tasks equal learners trained one after the
// other, whatever the number of threads; the error a run reports is the lowest-numbered task's;
// a stop skips the tasks not started and leaves the started ones consistent.
#include <budgetkernel/budgetkernel.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

// Learner k of a small grid: BSGD with its own gamma, lambda and maintenance.
KernelPegasos candidate(int k) {
  BSGDParams p;
  p.kernel = Kernel(KernelType::RBF, 0.5 + 0.25 * k);
  p.lam = 1e-3 * (1 + k % 3);
  p.budget = 12;
  p.maintenance = k % 2 ? Maintenance::Merge : Maintenance::RemoveSmallest;
  p.seed = static_cast<std::uint64_t>(k);
  return KernelPegasos(2, 3, p);
}

std::vector<KernelPegasos> grid(int n) {
  std::vector<KernelPegasos> v;
  for (int k = 0; k < n; ++k) v.push_back(candidate(k));
  return v;
}

// Runs `n` tasks on `n_jobs` threads and returns what run_tasks threw ("" if nothing).
std::string outcome(std::size_t n, int n_jobs, const std::function<void(std::size_t, StopPoll*)>& task) {
  try {
    run_tasks(n, n_jobs, task);
  } catch (const Interrupted& e) {
    return "interrupted after " + std::to_string(e.done());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("learners trained as tasks equal learners trained in turn, for any number of threads") {
  const bk_test::Stream s = bk_test::noisy_board(300, 3, 11, 0.1);
  const int n = 7;
  std::vector<KernelPegasos> alone = grid(n);
  for (auto& l : alone) l.partial_fit(s.X, s.y.data());
  for (int n_jobs : {1, 2, 3, 16}) {
    std::vector<KernelPegasos> many = grid(n);
    run_tasks(many.size(), n_jobs,
              [&](std::size_t i, StopPoll* stop) { many[i].partial_fit(s.X, s.y.data(), nullptr, stop); });
    for (int k = 0; k < n; ++k) CHECK(bk_test::bytes_of(many[k]) == bk_test::bytes_of(alone[k]));
  }
}

TEST_CASE("tasks start in index order, each once; no tasks and more threads than tasks are fine") {
  std::vector<std::size_t> order;
  run_tasks(5, 1, [&](std::size_t i, StopPoll*) { order.push_back(i); });
  CHECK((order == std::vector<std::size_t>{0, 1, 2, 3, 4}));

  std::vector<std::atomic<int>> runs(3);
  run_tasks(3, 8, [&](std::size_t i, StopPoll*) { ++runs[i]; });
  for (auto& r : runs) CHECK(r.load() == 1);

  run_tasks(0, 4, [](std::size_t, StopPoll*) { throw std::logic_error("never called"); });
  CHECK_THROWS(run_tasks(3, 0, [](std::size_t, StopPoll*) {}));
  CHECK_THROWS(run_tasks(0, -1, [](std::size_t, StopPoll*) {}));
}

TEST_CASE("the lowest-numbered failure is rethrown, after every other task ran") {
  for (int n_jobs : {1, 2, 4}) {
    std::vector<std::atomic<int>> ran(8);
    const std::string what = outcome(8, n_jobs, [&](std::size_t i, StopPoll*) {
      ++ran[i];
      // Task 5 fails first in time, task 2 later: the report must still be task 2's.
      if (i == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        throw std::invalid_argument("task 2");
      }
      if (i == 5) throw std::runtime_error("task 5");
    });
    CHECK(what == "task 2");
    for (auto& r : ran) CHECK(r.load() == 1);
  }
}

TEST_CASE("a task that throws Interrupted stops the run: tasks not started are skipped") {
  std::vector<int> ran(10, 0);
  const std::string what = outcome(10, 1, [&](std::size_t i, StopPoll*) {
    ran[i] = 1;
    if (i == 3) throw Interrupted(0);
  });
  CHECK(what == "interrupted after 3");
  CHECK((ran == std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST_CASE("stop_requested stops running learners at a row boundary and skips the rest") {
  const bk_test::Stream s = bk_test::noisy_board(400, 3, 5, 0.1);
  // Long tasks: each learner goes over the chunk many times, so the stop comes mid-task.
  const int n = 6, n_jobs = 2, passes = 1000;
  std::vector<KernelPegasos> many = grid(n);
  std::vector<std::atomic<int>> started(n);
  int calls_after_stop = 0;
  bool said_stop = false, interrupted = false;
  try {
    run_tasks(
        many.size(), n_jobs,
        [&](std::size_t i, StopPoll* stop) {
          ++started[i];
          for (int p = 0; p < passes; ++p) many[i].partial_fit(s.X, s.y.data(), nullptr, stop);
        },
        [&] {  // stop once the first n_jobs tasks have started (however loaded the machine is)
          if (said_stop) ++calls_after_stop;
          said_stop = started[0].load() + started[1].load() == n_jobs;
          return said_stop;
        },
        std::chrono::milliseconds(5));
  } catch (const Interrupted& e) {
    interrupted = true;
    CHECK(e.done() == 0);
  }
  CHECK(interrupted);
  CHECK(calls_after_stop == 0);  // not asked again once it said stop
  for (int k = 0; k < n; ++k) {
    CHECK(started[k].load() == (k < n_jobs ? 1 : 0));  // the others were skipped
    // A stopped learner is the learner of the rows before the stop (stop_poll.hpp).
    const std::int64_t rows = many[k].counters().examples;
    KernelPegasos prefix = candidate(k);
    for (std::int64_t done = 0; done < rows; done += s.X.rows()) {
      const Index m = static_cast<Index>((std::min<std::int64_t>)(rows - done, s.X.rows()));
      prefix.partial_fit(s.X.topRows(m), s.y.data());
    }
    CHECK(bk_test::bytes_of(prefix) == bk_test::bytes_of(many[k]));
    CHECK(rows < static_cast<std::int64_t>(passes) * s.X.rows());
  }
}

TEST_MAIN()
