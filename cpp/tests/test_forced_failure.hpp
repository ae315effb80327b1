#pragma once
// The IncrementalSVM test hook (detail::idsvm_fail_countdown) armed for one call: the tests of
// the strong exception guarantee of IncrementalSVM, IncrementalSVC and TwinVectorMachine. The
// hook exists only where BUDGETKERNEL_IDSVM_TEST_HOOKS is defined (svm/adiabatic_path.hpp): the
// test targets that include this header set it in cpp/tests/CMakeLists.txt.
#ifndef BUDGETKERNEL_IDSVM_TEST_HOOKS
#error "test_forced_failure.hpp needs BUDGETKERNEL_IDSVM_TEST_HOOKS (see cpp/tests/CMakeLists.txt)"
#endif
#include <budgetkernel/svm/incremental_svm.hpp>

#include <string>

namespace bk_test {

// Runs op() with the k-th bookkeeping step from now (of any IncrementalSVM on this thread)
// throwing; returns whether op threw std::runtime_error (its message into *what). The hook is
// disarmed afterwards either way (an operation that needed fewer steps leaves it armed).
template <class Op>
bool forced_failure(std::int64_t k, Op&& op, std::string* what = nullptr) {
  budgetkernel::detail::idsvm_fail_countdown = k;
  bool threw = false;
  try {
    op();
  } catch (const std::runtime_error& e) {
    threw = true;
    if (what) *what = e.what();
  }
  budgetkernel::detail::idsvm_fail_countdown = 0;
  return threw;
}

}  // namespace bk_test
