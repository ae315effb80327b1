#pragma once
/// \file learners/learner_base.hpp
/// What every online classifier of the library shares: labels, counters, prequential
/// (test-then-train) evaluation over chunks, and the model-file fields.

#include "calibration.hpp"
#include "learner_common.hpp"

#include <random>
#include <sstream>
#include <type_traits>
#include <utility>

namespace budgetkernel {

/// Counters every learner keeps.
struct Counters {
  std::int64_t examples = 0;     ///< examples seen (the online step t)
  std::int64_t updates = 0;      ///< examples that changed the model (SVs added)
  std::int64_t maintenance = 0;  ///< budget-maintenance steps
  double degradation = 0.0;      ///< accumulated ||Δw||^2 of budget maintenance
  std::int64_t mistakes = 0;     ///< prequential mistakes (prediction before learning)
  /// Labels the learner needed: every example for most learners; for the ramp-loss PA
  /// learners only those inside the margin (BPA paper 4.3, the active-learning reading).
  std::int64_t labels = 0;

  /// \param fm  receives the counters as the model file's "count.*" fields.
  void write(FieldMap& fm) const {
    fm.set_int("count.examples", examples);
    fm.set_int("count.updates", updates);
    fm.set_int("count.maintenance", maintenance);
    fm.set("count.degradation", degradation);
    fm.set_int("count.mistakes", mistakes);
    fm.set_int("count.labels", labels);
  }
  /// \param fm  a model file's fields; its "count.*" fields are read and range-checked.
  /// \throws std::runtime_error ("model file: invalid counter") on a negative or impossible count.
  void read(const FieldMap& fm) {
    examples = fm.get_i64("count.examples");
    updates = fm.get_i64("count.updates");
    maintenance = fm.get_i64("count.maintenance");
    degradation = fm.get_f64("count.degradation");
    mistakes = fm.get_i64("count.mistakes");
    labels = fm.get_i64("count.labels");
    constexpr std::int64_t most = detail::kMaxLoadedCount;
    if (examples < 0 || updates < 0 || maintenance < 0 || mistakes < 0 || labels < 0 || labels > examples ||
        examples > most || updates > most || maintenance > most || mistakes > most)
      detail::corrupt("invalid counter");
  }
};

namespace detail {

/// Binary learners use one output column with y = +1 for class 1 and -1 for class 0.
inline Index n_outputs_for(Index n_classes) { return n_classes == 2 ? 1 : n_classes; }

/// Predicted class index from the decision values of one example.
template <class V>
std::int32_t predict_from_scores(const Eigen::MatrixBase<V>& f) {
  if (f.size() == 1) return f(0) > 0.0 ? 1 : 0;
  Index best = 0;
  f.maxCoeff(&best);
  return static_cast<std::int32_t>(best);
}

/// n_features and n_classes of a model file, range-checked before anything is allocated.
/// A learner allocates per output (a coefficient column, or a whole machine), so the class
/// count is also checked against what the file stores for its outputs: the column count of
/// the matrix named `per_output` (its shape only), or, when `per_output` is a callable, the
/// field per_output(k) that output k writes (present for the last output, absent for one
/// more). Without this a crafted n_classes = 2^31 in a small file made the learner allocate
/// for 2^31 outputs (std::bad_alloc, or the process killed once the memory was touched).
template <class PerOutput>
std::pair<Index, Index> read_dims(const FieldMap& fm, const PerOutput& per_output) {
  const auto d = fm.get_i64("n_features"), c = fm.get_i64("n_classes");
  if (d < 1 || c < 2 || d > (std::int64_t{1} << 40) || c > (std::int64_t{1} << 31)) corrupt("invalid dimensions");
  const Index k = n_outputs_for(c);
  if constexpr (std::is_invocable_v<const PerOutput&, Index>) {
    if (!fm.has(per_output(k - 1)) || fm.has(per_output(k))) corrupt("n_classes does not match the stored machines");
  } else {
    const std::string name(per_output);
    const Field& f = fm.get(name, Field::F64);
    if (f.shape.size() != 2 || f.shape[1] != static_cast<std::uint64_t>(k))
      corrupt("n_classes does not match the columns of '" + name + "'");
    // n_features sizes allocations too (the (budget + 1) x d store, the d x k weights): check it
    // against the matrix with a column (kernel learners' sv.x) or a row (linear weights) per
    // feature, before anything is allocated (a 9 KB file with n_features = 2^31 - 1 asked for 16 GB).
    const bool linear = name == "weights";
    const Field& x = linear ? f : fm.get("sv.x", Field::F64);
    if (x.shape.size() != 2 || x.shape[linear ? 0 : 1] != static_cast<std::uint64_t>(d))
      corrupt(std::string("n_features does not match the ") + (linear ? "rows of 'weights'" : "columns of 'sv.x'"));
  }
  return {d, c};
}

/// Whether learner L scores blocks of rows (decision_rows(X, out, stop)).
template <class L, class = void>
struct has_decision_rows : std::false_type {};
template <class L>
struct has_decision_rows<L, std::void_t<decltype(std::declval<const L&>().decision_rows(
                                std::declval<const RowMatrix&>(), std::declval<RowMatrix&>(), nullptr))>>
    : std::true_type {};

}  // namespace detail

/// CRTP base: a learner implements `std::int32_t step(const double* x, std::int32_t y)`
/// (predicts, then learns; returns the prediction) and `void decision(const double* x, double* out)`.
template <class Derived>
class OnlineLearner {
 public:
  /// \return d, the number of values in every input row.
  Index n_features() const { return m_d; }
  /// \return c; labels are class indices 0 .. c-1.
  Index n_classes() const { return m_c; }
  /// \return the columns of the decision values: 1 for two classes (positive = class 1), else c.
  Index n_outputs() const { return detail::n_outputs_for(m_c); }
  /// \return what the learner counted so far (examples, updates, prequential mistakes, ...).
  const Counters& counters() const { return m_count; }

  /// What is wrong with one input row x[0..n_features()) to score (nullptr: nothing): NaN,
  /// infinity, or a squared norm beyond the kernel's Kernel::max_input_sqnorm
  /// (detail::kMaxRowSqNorm without a kernel).
  /// \param x  n_features() values.
  /// \return nullptr, or a description of the problem (pass it to describe_row_problem).
  const char* row_problem(const double* x) const { return detail::row_problem_of(self(), x, m_d); }
  /// The same for a row to learn from: also a k(x, x) too small to divide by
  /// (detail::learn_row_problem).
  /// \param x  n_features() values.
  /// \return nullptr, or a description of the problem.
  const char* learn_row_problem(const double* x) const { return detail::learn_row_problem_of(self(), x, m_d); }

  /// The message for a row x that row_problem / learn_row_problem rejected with `problem`
  /// (detail::describe_row_problem_of, learner_common.hpp, says how a row is described).
  /// \param x        the rejected row.
  /// \param problem  what row_problem or learn_row_problem returned for it (not null).
  /// \return the message, without the row's number.
  std::string describe_row_problem(const double* x, const char* problem) const {
    return detail::describe_row_problem_of(self(), x, m_d, problem);
  }

  /// Validates a chunk before any of it is learned or scored, so the hot loop itself never
  /// throws: the width, every row (learn_row_problem when `learning`, else row_problem) and
  /// the label range when y is given. \throws std::invalid_argument.
  /// \param X         the chunk, one example per row.
  /// \param y         X.rows() labels, or null (scoring).
  /// \param learning  whether the rows will be learned from (the stricter learn_row_problem).
  void check_chunk(const Eigen::Ref<const RowMatrix>& X, const std::int32_t* y, bool learning) const {
    detail::check_rows(self(), X, m_d, learning);
    if (y)
      for (Index i = 0; i < X.rows(); ++i)
        if (y[i] < 0 || y[i] >= m_c)
          detail::invalid("label index " + std::to_string(y[i]) + " out of range [0, " + std::to_string(m_c) + ")");
  }

  /// Test-then-train over a chunk: for each row, predict, then learn. Writes the
  /// predictions into `pred` when given (the prequential record). Validates first.
  /// `stop` (may be null) is asked before every row; when it says stop, throws Interrupted
  /// with the rows learned, which stay learned (see stop_poll.hpp).
  /// \param X     the chunk, one example per row, n_features() columns.
  /// \param y     X.rows() class indices in [0, n_classes()); the caller guarantees the length.
  /// \param pred  null, or room for X.rows() predicted class indices.
  /// \param stop  null, or the poll that can cancel the call.
  /// \throws std::invalid_argument if X or y is rejected (nothing learned then).
  /// \throws Interrupted if `stop` asked to stop.
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const std::int32_t* y, std::int32_t* pred = nullptr,
                   StopPoll* stop = nullptr) {
    check_chunk(X, y, true);
    // Kernel learners' stores answer the current row's kernel row from blocks of rows
    // (detail/chunk_dots.hpp), the same values as row by row.
    detail::ChunkScope chunk(X.data(), X.outerStride(), X.rows(), X.cols(),
                             detail::kChunkDotsPay && detail::has_kernel_params<Derived>::value &&
                                 m_d >= detail::kDotBlockMinDim);
    for (Index i = 0; i < X.rows(); ++i) {
      detail::poll_stop(stop, i);
      chunk.at(i);
      const std::int32_t p = learn_one(X.row(i).data(), y[i]);
      if (pred) pred[i] = p;
    }
  }

  /// partial_fit with sized labels (and predictions): their lengths are checked against
  /// X.rows(), which the pointer overload cannot do (a short y there is read past its end).
  /// Calls the derived class's partial_fit, so learners that wrap it keep their behaviour.
  /// \param X  the chunk, one example per row.
  /// \param y  X.rows() class indices.
  /// \throws std::invalid_argument if the lengths differ or the chunk is rejected.
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const Eigen::Ref<const IndexVector>& y) {
    check_length("partial_fit: y", y.size(), X.rows());
    self().partial_fit(X, y.data());
  }
  /// The same, also writing the prequential predictions.
  /// \param X     the chunk, one example per row.
  /// \param y     X.rows() class indices.
  /// \param pred  X.rows() entries, receive the prediction made for each row before learning it.
  /// \throws std::invalid_argument if the lengths differ or the chunk is rejected.
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const Eigen::Ref<const IndexVector>& y,
                   Eigen::Ref<IndexVector> pred) {
    check_length("partial_fit: y", y.size(), X.rows());
    check_length("partial_fit: pred", pred.size(), X.rows());
    self().partial_fit(X, y.data(), pred.data());
  }

  /// One already-validated example: predict, count a mistake, learn. Returns the prediction.
  /// A step that did not need the label (see Counters::labels) sets m_label_unused.
  /// \param x  n_features() values, already checked (check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning.
  std::int32_t learn_one(const double* x, std::int32_t y) {
    m_scores_noted = false;
    const std::int32_t p = self().step(x, y);
    finish_example(y, p);
    return p;
  }

  /// Whether the learner calibrates its decision values online (off by default: no
  /// calibration work, no "platt.*" fields in the model file). A learner with native
  /// probabilities (logistic loss) never calibrates, whatever this says.
  bool probability() const { return m_calibrate; }
  /// Turns the online calibration on or off. Turning it on starts an empty calibration (it
  /// records the prequential pairs of the examples learned from then on); turning it off
  /// discards it; setting the current value changes nothing.
  /// \param on  whether to calibrate.
  void set_probability(bool on) {
    if (on == m_calibrate) return;
    m_calibrate = on;
    m_platt.reset(n_outputs(), m_c);
  }

  /// Whether predict_proba can answer: a native map (logistic loss), or a calibration that is
  /// on and has recorded at least one prequential pair.
  bool has_probabilities() const { return m_native_proba || (m_calibrate && m_platt.fitted()); }
  /// The online Platt calibration (calibration.hpp); empty for a learner with native probabilities.
  const PlattCalibration& calibration() const { return m_platt; }
  /// Replaces the calibration by PlattCalibration::pooled(base, parts): that of a model mixed
  /// from models which continued from `base` (budgetkernel.dask.fit's rounds), whose
  /// calibrations are `parts`.
  /// \param base   the calibration of the model they continued from, or null (a fresh one).
  /// \param parts  the mixed models' calibrations.
  /// \throws std::invalid_argument when this model does not calibrate, or on calibrations of
  /// other classes or more pairs than the examples this model counts.
  void pool_calibration(const PlattCalibration* base, const std::vector<const PlattCalibration*>& parts) {
    detail::require(m_calibrate && !m_native_proba, "pool_calibration: the model does not calibrate");
    PlattCalibration pooled = m_platt.pooled(base, parts);
    detail::require(pooled.seen() <= m_count.examples,
                    "pool_calibration: more calibration pairs than the examples the model counts");
    m_platt = std::move(pooled);
  }
  /// The map predict_proba applies: the native one (sigmoid / softmax of the decision values)
  /// for a logistic-loss learner, else the calibration's last fit.
  ProbabilityMap probability_map() const { return m_native_proba ? ProbabilityMap{} : m_platt.map(); }

  /// Class probabilities (or their logarithms), n x n_classes: probability_map() applied to
  /// decision_function. `stop` as in partial_fit.
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_classes(), receives the probabilities (rows sum to 1) or logs.
  /// \param log   whether to write log-probabilities (computed directly, not as log(p)).
  /// \param stop  null, or the poll that can cancel the call.
  /// \throws std::invalid_argument on a rejected row or a wrongly shaped out.
  /// \throws std::logic_error when !has_probabilities() (calibration off, or nothing recorded).
  void predict_proba(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, bool log = false,
                     StopPoll* stop = nullptr) const {
    if (!m_native_proba && !m_calibrate)
      throw std::logic_error("predict_proba: the model does not calibrate its decision values (turn the "
                             "calibration on with set_probability(true) before learning)");
    if (!has_probabilities())
      throw std::logic_error("predict_proba: the calibration has not seen an example yet (it is learned "
                             "prequentially while the model learns; a combined model starts without one)");
    detail::require(out.rows() == X.rows() && out.cols() == m_c, "predict_proba: bad output shape");
    RowMatrix D(X.rows(), n_outputs());
    decision_function(X, D, stop);
    probability_map().apply(D, out, log);
  }

  /// Decision values, n x n_outputs. `stop` as in partial_fit. Learners with
  /// decision_rows (the kernel expansions) score blocks of rows there when the dot products
  /// go through register tiles (detail/dot_block.hpp); the values are decision()'s, bit for bit.
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call.
  /// \throws std::invalid_argument on a rejected row or a wrongly shaped out.
  /// \throws Interrupted if `stop` asked to stop.
  void decision_function(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out,
                         StopPoll* stop = nullptr) const {
    check_chunk(X, nullptr, false);
    detail::require(out.rows() == X.rows() && out.cols() == n_outputs(), "decision_function: bad output shape");
    if constexpr (detail::has_decision_rows<Derived>::value) {
      if (m_d >= detail::kDotBlockMinDim) return self().decision_rows(X, out, stop);
    }
    for (Index i = 0; i < X.rows(); ++i) {
      detail::poll_stop(stop, i);
      self().decision(X.row(i).data(), out.row(i).data());
    }
  }

  /// Decision values, n x n_outputs, as a new matrix (like Model::decision_function).
  /// \param X  the examples, one per row.
  /// \return X.rows() x n_outputs() values; the predicted class is the largest column (or, for
  ///         one column, 1 when positive).
  RowMatrix decision_function(const Eigen::Ref<const RowMatrix>& X) const {
    RowMatrix D(X.rows(), n_outputs());
    decision_function(X, D);
    return D;
  }

  /// Predicted class indices into out[0..X.rows()). `stop` as in partial_fit.
  /// A model with probabilities (has_probabilities()) predicts the class of highest
  /// probability, the first of those tied (scikit-learn's classes_[argmax(predict_proba)]):
  /// probability_map() keeps the order of the decision values, so this is the class of
  /// predict_from_scores except where the probabilities tie and the decision values do not (a
  /// calibration slope fitted to 0, or a difference lost in rounding). Without probabilities,
  /// predict_from_scores: the first largest decision value (one column: 1 when positive).
  /// The prequential prediction of a step is always predict_from_scores (training does not
  /// depend on the calibration).
  /// \param X     the examples, one per row.
  /// \param out   room for X.rows() class indices.
  /// \param stop  null, or the poll that can cancel the call.
  void predict(const Eigen::Ref<const RowMatrix>& X, std::int32_t* out, StopPoll* stop = nullptr) const {
    RowMatrix D(X.rows(), n_outputs());
    decision_function(X, D, stop);
    if (!has_probabilities()) {
      for (Index i = 0; i < X.rows(); ++i) out[i] = detail::predict_from_scores(D.row(i));
      return;
    }
    RowMatrix P(X.rows(), m_c);
    probability_map().apply(D, P, false);
    for (Index i = 0; i < X.rows(); ++i) {
      Index best = 0;  // Eigen's maxCoeff keeps the first of equal maxima
      P.row(i).maxCoeff(&best);
      out[i] = static_cast<std::int32_t>(best);
    }
  }
  /// The same into a sized vector, its length checked against X.rows().
  /// \param X    the examples, one per row.
  /// \param out  X.rows() entries, receive the class indices.
  void predict(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<IndexVector> out) const {
    check_length("predict: out", out.size(), X.rows());
    predict(X, out.data());
  }

  /// Opaque bytes stored alongside the model (the Python layer keeps its labels and
  /// parameters there).
  std::string metadata;

 protected:
  /// `budget` > 0: the store is preallocated with budget + 1 rows of n_features values, so
  /// (budget + 1) * n_features is capped at 2^31 values (16 GiB); this also keeps budget + 1
  /// from overflowing for a budget read from a crafted model file.
  void init_base(Index n_features, Index n_classes, Index budget = 0) {
    detail::check_budget_size(n_features, budget);
    detail::require(n_classes >= 2, "need at least 2 classes");
    m_d = n_features;
    m_c = n_classes;
    m_count = Counters{};
    m_platt.reset(detail::n_outputs_for(n_classes), n_classes);
    m_pre_f.setZero(detail::n_outputs_for(n_classes));
    m_native_proba = false;
  }
  void write_base(FieldMap& fm, const char* learner) const {
    fm.set_bytes("learner", learner);
    fm.set_int("n_features", m_d);
    fm.set_int("n_classes", m_c);
    fm.set_int("n_outputs", n_outputs());
    fm.set_bytes("meta", metadata);
    m_count.write(fm);
    if (m_calibrate && !m_native_proba) {  // format v1: an uncalibrated model has no "probability" field
      fm.set_int("probability", 1);
      m_platt.save(fm);
    }
  }
  void read_base(const FieldMap& fm, const char* learner) {
    if (fm.get_bytes("learner") != learner)
      detail::corrupt("holds a '" + fm.get_bytes("learner") + "' model, not '" + learner + "'");
    const auto d = fm.get_i64("n_features"), c = fm.get_i64("n_classes");
    if (d < 1 || c < 2 || fm.get_i64("n_outputs") != detail::n_outputs_for(c)) detail::corrupt("invalid dimensions");
    const bool native = m_native_proba;  // set by the learner's parameters (reset), kept
    init_base(d, c);
    m_native_proba = native;
    m_count.read(fm);
    metadata = fm.get_bytes("meta");
    m_calibrate = fm.has("probability");  // see write_base
    if (m_calibrate && (fm.get_i64("probability") != 1 || m_native_proba)) detail::corrupt("invalid 'probability' field");
    if (!m_calibrate && fm.has("platt.seen")) detail::corrupt("calibration fields without probability");
    m_platt.load(fm);
    if (m_platt.seen() > m_count.examples) detail::corrupt("invalid calibration window");
  }

  /// What follows a step: the prequential counters, and the prequential pair for the
  /// calibration (the decision values the step noted with note_scores).
  void finish_example(std::int32_t y, std::int32_t pred) {
    if (pred != y) ++m_count.mistakes;
    if (!m_label_unused) ++m_count.labels;
    m_label_unused = false;
    if (m_calibrate && !m_native_proba && m_scores_noted) m_platt.record(m_pre_f.data(), y);
  }

  /// A step's prequential decision values (those its prediction came from), for the online
  /// calibration: every learner's step calls it once, after scoring and before learning.
  template <class V>
  void note_scores(const Eigen::MatrixBase<V>& f) {
    if (!m_calibrate) return;  // off: not even the copy
    m_pre_f = f;
    m_scores_noted = true;
  }

  /// Sets whether the learner's decision values are log-odds (logistic loss): predict_proba is
  /// then their sigmoid / softmax and no calibration is recorded. Call after init_base.
  void set_native_probabilities(bool native) { m_native_proba = native; }

  Index m_d = 1, m_c = 2;
  Counters m_count;
  bool m_label_unused = false;  ///< set by a step whose update did not depend on the label
  PlattCalibration m_platt;     ///< online Platt scaling of the prequential decision values
  Vector m_pre_f;               ///< the current step's prequential decision values (note_scores)
  bool m_scores_noted = false;
  bool m_native_proba = false;
  bool m_calibrate = false;     ///< probability(): kept by init_base, set by read_base from the file

 private:
  static void check_length(const char* what, Index n, Index rows) { detail::check_length(what, n, rows); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace budgetkernel
