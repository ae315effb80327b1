#pragma once
/// \file svm/idsvm_types.hpp
/// The vocabulary shared by the exact incremental SVM (svm/incremental_svm.hpp), its undo
/// journal and the learners built on it: the sets of the Kuhn-Tucker partition, the error that
/// names a parameter out of double precision's reach, and the report of a failed chunk.

#include "../common.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace budgetkernel {

/// Membership of a stored example (S, E, R of the TVM paper).
enum class SVMSet : std::int8_t { Margin = 0, Error = 1, Reserve = 2 };

namespace detail {

/// Thrown by IncrementalSVM when C (times an example's weight) or the ridge is too large for
/// the kernel's scale to be learned in double precision (see IncrementalSVM::check_scale). A
/// std::invalid_argument (ValueError in Python): a parameter is at fault, not the data's
/// conditioning (that breakdown is a std::runtime_error). The operation is undone like any
/// failure.
class IDSVMScaleError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// For the learners built on IncrementalSVM (IncrementalSVC, TwinVectorMachine): runs
/// `learn_chunk` (a loop over a chunk whose every step is atomic) and rethrows a
/// std::runtime_error (an IDSVMScaleError as such) with the number of examples of the chunk
/// learned before the failing one, read from the learner's example counter (`examples`), which
/// a failed step leaves unchanged.
template <class F>
void report_chunk_failure(const char* who, const std::int64_t& examples, F&& learn_chunk) {
  const std::int64_t before = examples;
  const auto prefix = [&] {
    const std::string k = std::to_string(examples - before);
    return std::string(who) + ": example " + k + " of the chunk (0-based) could not be learned and was undone; the " +
           k + " examples before it stay learned (the model is exactly as after them). Cause: ";
  };
  try {
    learn_chunk();
  } catch (const IDSVMScaleError& e) {
    throw IDSVMScaleError(prefix() + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(prefix() + e.what());
  }
}

}  // namespace detail

}  // namespace budgetkernel
