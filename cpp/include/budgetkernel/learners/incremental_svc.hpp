#pragma once
/// \file learners/incremental_svc.hpp
/// The exact incremental-decremental SVM (svm/incremental_svm.hpp) as an online classifier:
/// every example of the stream is learned exactly (no budget), so after t examples the model
/// is the batch SVM of those t examples (Cauwenberghs & Poggio, NIPS 2000).
///
/// Binary: one machine, y = +1 for class 1 and -1 for class 0. Multi-class: one-vs-rest,
/// c machines; every example is learned by each machine k with y = +1 if its class is k and
/// -1 otherwise, and the prediction is the class of the largest decision value. All machines
/// learn and unlearn the same examples in the same order, so they store them in the same rows
/// under the same keys: example number t (0-based position in the stream seen by this
/// learner) is key t in every machine, and one kernel row serves all machines' decisions.
///
/// Cost per example: O(N d) for the kernel row plus, per machine, O(N d) for the new
/// example's kernel column and O(N |S| + |S|^2) per bookkeeping step (N = examples stored).
///
/// Scoring (decision, decision_rows, and so predict) reads the support vectors only, as
/// LIBSVM's predictor does: O(n_SV d) per row instead of the O(N d) of a kernel row over every
/// stored example, most of which (the reserve set R, alpha = 0) contribute nothing. They are
/// gathered once after each change of the model (support()), and scored exactly as
/// budgetkernel::Model scores this learner's model file, so the two agree bit for bit. Learning
/// keeps its kernel row over every stored example: the bookkeeping needs all of it.
///
/// Failure: a numerical breakdown of a machine (std::runtime_error, see IncrementalSVM) in
/// step, unlearn, set_C or set_weight leaves the learner exactly as before the call: each
/// operation runs on every machine inside one IncrementalSVM transaction, and when machine k
/// throws, machines 0..k-1, which already applied it, are rolled back (otherwise they would
/// disagree about the example and its key). The counters do not count a failed example, so
/// the example numbers stay the positions of the learned examples in the stream. In a chunk
/// (partial_fit, partial_fit_weighted) the examples before the failing one stay learned and
/// the exception says how many they are.
///
/// IDSVMParams::ridge > 0 makes every machine the SVM on the training kernel matrix
/// K + ridge I (see IncrementalSVM): a way around the numerical breakdown on a numerically
/// rank-deficient kernel matrix. Decision values use the plain kernel.

#include "../svm/incremental_svm.hpp"
#include "learner_base.hpp"

#include <memory>
#include <mutex>

namespace budgetkernel {

namespace detail {

/// A value derived from its owner's state: made on first use and kept until reset(), which
/// every change of that state calls. get() may run in concurrent const calls (the first makes
/// the value under the mutex, the others wait for it and share it). A copy starts empty.
template <class T>
class Lazy {
 public:
  Lazy() = default;
  Lazy(const Lazy&) {}
  Lazy& operator=(const Lazy&) {
    reset();
    return *this;
  }
  void reset() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_value.reset();
  }
  template <class Make>
  std::shared_ptr<const T> get(Make&& make) const {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_value) m_value = std::make_shared<const T>(make());
    return m_value;
  }

 private:
  mutable std::mutex m_mutex;
  mutable std::shared_ptr<const T> m_value;
};

}  // namespace detail

/// Parameters of the incremental SVM learner.
struct IDSVMParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double C = 1.0;  ///< upper bound of alpha_i is C * weight_i
  /// Added to the diagonal of the training kernel matrix (K + ridge I); 0 = the exact SVM.
  double ridge = 0.0;

  void validate() const {
    detail::require_positive(C, "C");
    detail::require_non_negative(ridge, "ridge");
  }
};

class IncrementalSVC : public OnlineLearner<IncrementalSVC> {
 public:
  IncrementalSVC() = default;
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  IncrementalSVC(Index n_features, Index n_classes, const IDSVMParams& params) { reset(n_features, n_classes, params); }

  /// Starts over: an empty model with these dimensions and parameters, counters at 0 and the
  /// random generator seeded from the parameters.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  void reset(Index n_features, Index n_classes, const IDSVMParams& params) {
    params.validate();
    init_base(n_features, n_classes);
    m_p = params;
    m_machines.clear();
    for (Index k = 0; k < n_outputs(); ++k) m_machines.emplace_back(n_features, params.kernel, params.C, params.ridge);
    m_krow.setZero(64);
    m_f.setZero(n_outputs());
    m_support.reset();
  }

  const IDSVMParams& params() const { return m_p; }

  /// Predicts with the current model, then learns (x, y) with weight 1.
  /// \param x  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* x, std::int32_t y) { return step_weighted(x, y, 1.0); }

  /// Predicts, then learns (x, y) with weight s (alpha <= C s in every machine).
  /// \throws std::invalid_argument on a weight that is not positive and finite.
  /// \throws std::runtime_error on a numerical breakdown of a machine (see IncrementalSVM);
  ///         the learner is then exactly as before the call (see the file comment).
  /// \param xp      n_features() values, already checked.
  /// \param y       its class index, already checked.
  /// \param weight  s > 0: scales the example's C.
  /// \return the class index predicted before learning.
  std::int32_t step_weighted(const double* xp, std::int32_t y, double weight) {
    detail::require(std::isfinite(weight) && weight > 0.0, "weight must be a positive finite number");
    decision_into(xp, m_f);
    const std::int32_t pred = detail::predict_from_scores(m_f);
    note_scores(m_f);
    bool support = false;
    on_every_machine([&](IncrementalSVM& m, Index k) {
      const double yk = n_outputs() == 1 ? (y == 1 ? 1.0 : -1.0) : (y == k ? 1.0 : -1.0);
      const std::int64_t key = m.learn(xp, yk, weight);
      support = support || m.alpha(m.index_of(key)) > 0.0;
    });
    ++m_count.examples;
    if (support) ++m_count.updates;
    return pred;
  }

  using OnlineLearner::partial_fit;
  /// Test-then-train over a chunk (OnlineLearner::partial_fit); on a numerical breakdown the
  /// examples before the failing one stay learned and the exception says how many they are.
  /// (The base's size-checked IndexVector overloads forward to this one.)
  /// \param X     the chunk, one example per row.
  /// \param y     X.rows() class indices.
  /// \param pred  null, or room for X.rows() predictions.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const std::int32_t* y, std::int32_t* pred = nullptr,
                   StopPoll* stop = nullptr) {
    detail::report_chunk_failure("IncrementalSVC::partial_fit", m_count.examples,
                                 [&] { OnlineLearner::partial_fit(X, y, pred, stop); });
  }

  /// Test-then-train over a weighted chunk (validated like partial_fit; weights > 0, finite).
  /// \param X     the chunk, one example per row.
  /// \param y     X.rows() class indices.
  /// \param w     X.rows() weights (each scales its example's C).
  /// \param pred  null, or room for X.rows() predictions.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void partial_fit_weighted(const Eigen::Ref<const RowMatrix>& X, const std::int32_t* y, const double* w,
                            std::int32_t* pred = nullptr, StopPoll* stop = nullptr) {
    check_chunk(X, y, true);
    detail::require(w != nullptr, "weights are required");
    for (Index i = 0; i < X.rows(); ++i)
      detail::require(std::isfinite(w[i]) && w[i] > 0.0, "weights must be positive finite numbers");
    detail::report_chunk_failure("IncrementalSVC::partial_fit_weighted", m_count.examples, [&] {
      for (Index i = 0; i < X.rows(); ++i) {
        detail::poll_stop(stop, i);
        m_scores_noted = false;
        const std::int32_t p = step_weighted(X.row(i).data(), y[i], w[i]);
        finish_example(y[i], p);
        if (pred) pred[i] = p;
      }
    });
  }

  /// Decision values of one example (n_outputs values), over the support vectors (see the file
  /// comment). Thread-safe.
  /// \param xp    n_features() values.
  /// \param out  receives n_outputs() decision values.
  void decision(const double* xp, double* out) const { score(*support(), xp, out, nullptr); }

  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// taken per block of rows (detail::for_row_blocks).
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    const std::shared_ptr<const Support> s = support();
    thread_local RowMatrix D;
    detail::for_row_blocks(X.rows(), s->sv.size(), stop, [&](Index i, Index b) {
      s->sv.dots_rows(X.middleRows(i, b), D);
      for (Index r = 0; r < b; ++r) score(*s, X.row(i + r).data(), out.row(i + r).data(), D.row(r).data());
    });
  }

  /// The support vectors: the stored examples with alpha > 0 in some machine (in row order,
  /// ids = their example numbers), y_i alpha_i per machine as coefficients, and the machines'
  /// biases. What decision() scores with and save() writes for budgetkernel::Model. Made on
  /// first use after a change of the model, O(N c + n_SV d); thread-safe.
  struct Support {
    SupportVectors sv;
    Vector bias;
  };
  std::shared_ptr<const Support> support() const {
    return m_support.get([this] {
      const IncrementalSVM& m0 = m_machines.front();
      std::vector<Index> rows;
      for (Index i = 0; i < m0.size(); ++i)
        if (is_support(i)) rows.push_back(i);
      const Index n = static_cast<Index>(rows.size());
      RowMatrix X(n, m_d), A(n, n_outputs());
      std::vector<std::int64_t> ids;
      for (Index r = 0; r < n; ++r) {
        const Index i = rows[static_cast<std::size_t>(r)];
        X.row(r) = m0.X().row(i);
        ids.push_back(m0.key(i));
        for (Index k = 0; k < n_outputs(); ++k) {
          const IncrementalSVM& m = m_machines[static_cast<std::size_t>(k)];
          A(r, k) = m.y(i) * m.alpha(i);
        }
      }
      Support s;
      s.sv.assign(X, A, ids, n);
      s.bias.resize(n_outputs());
      for (Index k = 0; k < n_outputs(); ++k) s.bias(k) = m_machines[static_cast<std::size_t>(k)].bias();
      return s;
    });
  }

  /// Forgets example number `example` (0-based position in the stream seen by this learner).
  /// \throws std::invalid_argument if it is unknown (never learned, or already forgotten).
  /// `stop` (may be null): asked between the machines' bookkeeping steps; when it says stop,
  /// every machine is left as before and Interrupted(0) thrown (also for set_C, set_weight).
  /// \param example  the example's number.
  /// \param stop     null, or the poll that can cancel the call.
  void unlearn(std::int64_t example, StopPoll* stop = nullptr) {
    check_example(example, "unlearn");
    on_every_machine([&](IncrementalSVM& m, Index) { m.unlearn(example, stop); });
  }

  /// Regularisation-parameter perturbation of every machine (exact, adiabatic).
  /// \param C     the new C, > 0 and finite.
  /// \param stop  null, or the poll that can cancel the call (the machines are then as before).
  void set_C(double C, StopPoll* stop = nullptr) {
    detail::require(std::isfinite(C) && C > 0.0, "C must be a positive finite number");
    on_every_machine([&](IncrementalSVM& m, Index) { m.set_C(C, stop); });
    m_p.C = C;
  }

  /// Changes the weight of example number `example` in every machine (exact, adiabatic).
  /// \param example  the example's number.
  /// \param weight   its new weight (scales its C).
  /// \param stop     null, or the poll that can cancel the call (the machines are then as before).
  void set_weight(std::int64_t example, double weight, StopPoll* stop = nullptr) {
    check_example(example, "set_weight");
    detail::require(std::isfinite(weight) && weight > 0.0, "weight must be a positive finite number");
    on_every_machine([&](IncrementalSVM& m, Index) { m.set_weight(example, weight, stop); });
  }

  /// Machine k < n_outputs() (one for binary, one per class for one-vs-rest).
  /// \param k  the machine's index.
  /// \return the exact SVM of output k.
  const IncrementalSVM& machine(Index k) const {
    detail::require(k >= 0 && k < n_outputs(), "machine index out of range");
    return m_machines[static_cast<std::size_t>(k)];
  }

  /// Examples with alpha > 0 in at least one machine.
  Index n_support() const { return support()->sv.size(); }

  /// Every machine's exact state plus the fields budgetkernel::Model reads: sv.x (the examples
  /// with alpha > 0 in some machine), sv.alpha (y_i alpha_i per machine, 0 where not a SV),
  /// bias (1 x n_outputs), scale = 1 and the kernel.
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "idsvm");
    write_kernel(fm, m_p.kernel);
    fm.set("C", m_p.C);
    fm.set("ridge", m_p.ridge);
    for (Index k = 0; k < n_outputs(); ++k) m_machines[static_cast<std::size_t>(k)].save(fm, prefix(k));
    const std::shared_ptr<const Support> s = support();
    fm.set("scale", 1.0);
    write_svs(fm, s->sv);
    fm.set_matrix("bias", s->bias.transpose());
  }

  /// \throws std::runtime_error ("model file: ...") on a missing, inconsistent or corrupt field.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm) {
    IDSVMParams p;
    p.kernel = read_kernel(fm);
    p.C = fm.get_f64("C");
    p.ridge = fm.get_f64("ridge");
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, [](Index k) { return prefix(k) + "dim"; });
    IncrementalSVC t(d, c, p);
    t.read_base(fm, "idsvm");
    for (Index k = 0; k < t.n_outputs(); ++k) {
      IncrementalSVM& m = t.m_machines[static_cast<std::size_t>(k)];
      m.load(fm, prefix(k));
      if (m.dim() != d || m.C() != p.C || m.ridge() != p.ridge || m.kernel().type() != p.kernel.type() ||
          m.kernel().gamma() != p.kernel.gamma() || m.kernel().degree() != p.kernel.degree() ||
          m.kernel().coef0() != p.kernel.coef0())
        detail::corrupt("IDSVM machine " + std::to_string(k) + " does not match the learner's parameters");
    }
    // The machines must hold the same examples in the same rows (see the file comment).
    const IncrementalSVM& m0 = t.m_machines.front();
    for (const auto& m : t.m_machines) {
      if (m.size() != m0.size()) detail::corrupt("IDSVM machines hold different examples");
      for (Index i = 0; i < m.size(); ++i)
        if (m.key(i) != m0.key(i) || m.X().row(i) != m0.X().row(i)) detail::corrupt("IDSVM machines hold different examples");
    }
    *this = std::move(t);
  }

 private:
  static std::string prefix(Index k) { return "m" + std::to_string(k) + "."; }

  /// op(machine k, k) for every machine as one unit: inside a transaction per machine, all
  /// committed at the end, all rolled back if one throws (the machines must agree).
  template <class Op>
  void on_every_machine(Op&& op) {
    m_support.reset();
    try {
      for (Index k = 0; k < n_outputs(); ++k) {
        IncrementalSVM& m = m_machines[static_cast<std::size_t>(k)];
        m.begin_transaction();
        op(m, k);
      }
    } catch (...) {
      for (auto& m : m_machines) m.rollback();  // a no-op for the machines not reached
      throw;
    }
    for (auto& m : m_machines) m.commit();
  }

  bool is_support(Index i) const {
    for (const auto& m : m_machines)
      if (m.alpha(i) > 0.0) return true;
    return false;
  }

  void check_example(std::int64_t example, const char* what) const {
    if (m_machines.empty() || m_machines.front().index_of(example) < 0)
      detail::invalid(std::string("IncrementalSVC::") + what + ": unknown example " + std::to_string(example));
  }

  /// Decision values from the support vectors, exactly as budgetkernel::Model computes them
  /// from the model file (same kernel row over the same rows, same reduction, scale 1).
  /// `dots`: x's dot products with the support vectors when already known, else null.
  void score(const Support& s, const double* xp, double* out, const double* dots) const {
    Eigen::Map<Vector> f(out, n_outputs());
    if (s.sv.empty()) {
      f.setZero();
    } else {
      thread_local Vector krow;
      if (krow.size() < s.sv.size()) krow.resize(s.sv.size());
      const Eigen::Map<const Vector> x(xp, m_d);
      s.sv.kernel_row(m_p.kernel, x, x.squaredNorm(), krow, dots);
      s.sv.scores(krow, f);
    }
    f += s.bias;
  }

  /// Decision values while learning, through one kernel row over every stored example (work
  /// buffer of the learner), which the machines' bookkeeping needs anyway.
  void decision_into(const double* xp, Vector& f) {
    const Index n = m_machines.front().size();
    if (m_krow.size() < n) m_krow.resize(2 * n);
    if (n > 0) m_machines.front().kernel_row(xp, m_krow);
    for (Index k = 0; k < n_outputs(); ++k) f(k) = m_machines[static_cast<std::size_t>(k)].decision_from_row(m_krow.head(n));
  }

  IDSVMParams m_p;
  std::vector<IncrementalSVM> m_machines{IncrementalSVM()};
  Vector m_krow, m_f;
  detail::Lazy<Support> m_support;
};

}  // namespace budgetkernel
