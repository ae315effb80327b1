#pragma once
/// \file learners/regressor_base.hpp
/// What every online regressor of the library shares: counters with the prequential squared
/// and absolute errors, the test-then-train loop over chunks of real targets, and the
/// model-file fields. The regression counterpart of learner_base.hpp's OnlineLearner; the
/// checks of input rows are the same (learner_common.hpp).

#include "../detail/chunk_dots.hpp"
#include "learner_common.hpp"

#include <cmath>
#include <string>
#include <type_traits>

namespace budgetkernel {

/// Counters every regressor keeps.
struct RegressionCounters {
  std::int64_t examples = 0;     ///< examples seen (the online step t)
  std::int64_t updates = 0;      ///< examples that added an SV to the expansion
  std::int64_t maintenance = 0;  ///< budget-maintenance steps
  double degradation = 0.0;      ///< accumulated ||Δw||^2 of budget maintenance
  double sse = 0.0;              ///< prequential sum of squared errors (prediction before learning)
  double sae = 0.0;              ///< prequential sum of absolute errors

  /// \param fm  receives the counters as the model file's "count.*" fields.
  void write(FieldMap& fm) const {
    fm.set_int("count.examples", examples);
    fm.set_int("count.updates", updates);
    fm.set_int("count.maintenance", maintenance);
    fm.set("count.degradation", degradation);
    fm.set("count.sse", sse);
    fm.set("count.sae", sae);
  }
  /// \param fm  a model file's fields; its "count.*" fields are read and range-checked.
  /// \throws std::runtime_error ("model file: invalid counter") on a negative, NaN or impossible count.
  void read(const FieldMap& fm) {
    examples = fm.get_i64("count.examples");
    updates = fm.get_i64("count.updates");
    maintenance = fm.get_i64("count.maintenance");
    degradation = fm.get_f64("count.degradation");
    sse = fm.get_f64("count.sse");
    sae = fm.get_f64("count.sae");
    constexpr std::int64_t most = detail::kMaxLoadedCount;
    // The sums may be +inf (errors beyond the double range), never negative or NaN.
    if (examples < 0 || updates < 0 || maintenance < 0 || updates > examples || examples > most ||
        maintenance > most || !(degradation >= 0.0) || !(sse >= 0.0) || !(sae >= 0.0))
      detail::corrupt("invalid counter");
  }
};

namespace detail {

/// The largest |y| a regressor accepts: its square (squared errors, losses) stays finite.
inline constexpr double kMaxTarget = 1e150;

/// Whether regressor L scores blocks of rows (decision_rows(X, out, stop), out: one per row).
template <class L, class = void>
struct has_regression_rows : std::false_type {};
template <class L>
struct has_regression_rows<L, std::void_t<decltype(std::declval<const L&>().decision_rows(
                                  std::declval<const RowMatrix&>(), std::declval<double*>(), nullptr))>>
    : std::true_type {};

}  // namespace detail

/// CRTP base of the regressors: a regressor implements
///   double step(const double* x, double y);   // predict, then learn; returns the prediction made before learning
///   double decision(const double* x) const;   // the prediction f(x)
/// and optionally decision_rows(X, out, stop) for blocked scoring (the same values, bit for bit).
/// It calls init_base in its reset and write_base / read_base in its save / load.
template <class Derived>
class OnlineRegressor {
 public:
  /// \return d, the number of values in every input row.
  Index n_features() const { return m_d; }
  /// \return 1: one prediction per row (what budgetkernel::Model reads as the output count).
  Index n_outputs() const { return 1; }
  /// \return what the regressor counted so far (examples, updates, prequential errors, ...).
  const RegressionCounters& counters() const { return m_count; }

  /// What is wrong with one input row to score (nullptr: nothing), as OnlineLearner::row_problem.
  const char* row_problem(const double* x) const { return detail::row_problem_of(self(), x, m_d); }
  /// The same for a row to learn from, as OnlineLearner::learn_row_problem.
  const char* learn_row_problem(const double* x) const { return detail::learn_row_problem_of(self(), x, m_d); }
  /// The message for a rejected row, as OnlineLearner::describe_row_problem.
  std::string describe_row_problem(const double* x, const char* problem) const {
    return detail::describe_row_problem_of(self(), x, m_d, problem);
  }
  /// What is wrong with a target (nullptr: nothing): NaN, infinity, or |y| > detail::kMaxTarget.
  static const char* target_problem(double y) {
    if (std::isnan(y) || std::isinf(y)) return "is NaN or infinity";
    if (!(std::abs(y) <= detail::kMaxTarget)) return "exceeds 1e150 in magnitude (its square must stay finite)";
    return nullptr;
  }

  /// Validates a chunk before any of it is learned or scored, so the hot loop never throws:
  /// the width, every row, and every target when y is given. \throws std::invalid_argument.
  /// \param X         the chunk, one example per row.
  /// \param y         X.rows() targets, or null (scoring).
  /// \param learning  whether the rows will be learned from (the stricter learn_row_problem).
  void check_chunk(const Eigen::Ref<const RowMatrix>& X, const double* y, bool learning) const {
    detail::check_rows(self(), X, m_d, learning);
    if (y)
      for (Index i = 0; i < X.rows(); ++i)
        if (const char* problem = target_problem(y[i])) detail::invalid("target y[" + std::to_string(i) + "] " + problem);
  }

  /// Test-then-train over a chunk: for each row, predict, then learn, exactly as
  /// OnlineLearner::partial_fit (validated first; `stop` asked before every row, Interrupted
  /// with the rows learned, which stay learned).
  /// \param X     the chunk, one example per row, n_features() columns.
  /// \param y     X.rows() targets; the caller guarantees the length.
  /// \param pred  null, or room for X.rows() predictions made before learning each row.
  /// \param stop  null, or the poll that can cancel the call.
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const double* y, double* pred = nullptr,
                   StopPoll* stop = nullptr) {
    check_chunk(X, y, true);
    detail::ChunkScope chunk(X.data(), X.outerStride(), X.rows(), X.cols(),
                             detail::kChunkDotsPay && detail::has_kernel_params<Derived>::value &&
                                 m_d >= detail::kDotBlockMinDim);
    for (Index i = 0; i < X.rows(); ++i) {
      detail::poll_stop(stop, i);
      chunk.at(i);
      const double p = learn_one(X.row(i).data(), y[i]);
      if (pred) pred[i] = p;
    }
  }
  /// partial_fit with sized targets, their length checked against X.rows().
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const Eigen::Ref<const Vector>& y) {
    detail::check_length("partial_fit: y", y.size(), X.rows());
    self().partial_fit(X, y.data());
  }

  /// One already-validated example: predict, count its errors, learn.
  /// \param x  n_features() values, already checked (check_chunk).
  /// \param y  its target, already checked.
  /// \return the prediction made before learning.
  double learn_one(const double* x, double y) {
    const double p = self().step(x, y);
    const double e = y - p;
    m_count.sse += e * e;
    m_count.sae += std::abs(e);
    return p;
  }

  /// Predictions f(x) into out[0..X.rows()); `stop` as in partial_fit. Regressors with
  /// decision_rows score blocks of rows there from detail::kDotBlockMinDim features on.
  /// \throws std::invalid_argument on a rejected row; Interrupted if `stop` asked to stop.
  void decision_function(const Eigen::Ref<const RowMatrix>& X, double* out, StopPoll* stop = nullptr) const {
    check_chunk(X, nullptr, false);
    if constexpr (detail::has_regression_rows<Derived>::value) {
      if (m_d >= detail::kDotBlockMinDim) return self().decision_rows(X, out, stop);
    }
    for (Index i = 0; i < X.rows(); ++i) {
      detail::poll_stop(stop, i);
      out[i] = self().decision(X.row(i).data());
    }
  }
  /// The predictions as a new vector.
  Vector decision_function(const Eigen::Ref<const RowMatrix>& X) const {
    Vector out(X.rows());
    decision_function(X, out.data());
    return out;
  }
  /// predict is decision_function for a regressor.
  void predict(const Eigen::Ref<const RowMatrix>& X, double* out, StopPoll* stop = nullptr) const {
    decision_function(X, out, stop);
  }

  /// Opaque bytes stored alongside the model (the Python layer keeps its parameters there).
  std::string metadata;

 protected:
  void init_base(Index n_features, Index budget = 0) {
    detail::check_budget_size(n_features, budget);
    m_d = n_features;
    m_count = RegressionCounters{};
  }
  /// The fields every regressor writes: "learner", "task" = "regression", "n_features",
  /// "n_outputs" = 1 (budgetkernel::Model predicts from them), "meta" and the counters.
  void write_base(FieldMap& fm, const char* learner) const {
    fm.set_bytes("learner", learner);
    fm.set_bytes("task", "regression");
    fm.set_int("n_features", m_d);
    fm.set_int("n_outputs", 1);
    fm.set_bytes("meta", metadata);
    m_count.write(fm);
  }
  /// Reads write_base's fields; the learner's parameters and store are its own to read.
  /// \throws std::runtime_error ("model file: ...") on another learner or task, or bad values.
  void read_base(const FieldMap& fm, const char* learner) {
    if (fm.get_bytes("learner") != learner)
      detail::corrupt("holds a '" + fm.get_bytes("learner") + "' model, not '" + learner + "'");
    if (!fm.has("task") || fm.get_bytes("task") != "regression") detail::corrupt("not a regression model");
    const auto d = fm.get_i64("n_features");
    if (d < 1 || d > (std::int64_t{1} << 40) || fm.get_i64("n_outputs") != 1) detail::corrupt("invalid dimensions");
    m_d = d;
    m_count.read(fm);
    metadata = fm.get_bytes("meta");
  }

  Index m_d = 1;
  RegressionCounters m_count;

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace budgetkernel
