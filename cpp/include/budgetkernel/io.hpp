#pragma once
/// \file io.hpp
/// The model file format shared by C++ and Python: the container (field_map.hpp), its bytes on
/// disk (file_bytes.hpp), the fields shared by every learner (kernel, support vectors) and
/// budgetkernel::Model, the learner-independent predictor of any model file.
///
/// Format version 1 is frozen: tests/data/format_v1/ holds files of every learner and
/// configuration the writers distinguish, and tests/test_format_v1.py checks that each loads,
/// re-saves to the same bytes and predicts as stored. A learner reads every field its writer
/// always writes and fails ("model file: missing field ...") without it; a field is optional
/// only where the writer omits it at its default (documented at each save()).
///
/// A field's key is part of the format, so it stays even where the Params field has another
/// name: BOGD's "lambda" holds BOGDParams::lam. Enums are stored as their numbers
/// (the tables of detail/enum_names.hpp give their names): "kernel.type", "maintenance" (BSGD
/// and perceptron), "loss", "variant", "sampling", "tvm.merge". SPA's "force_sample" is
/// reserved: always written as 0, and a file with another value is refused (sparse_pa.hpp).

#include "common.hpp"
#include "field_map.hpp"
#include "file_bytes.hpp"
#include "stop_poll.hpp"
#include "sv_store.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace budgetkernel {

/// Writes the kernel's parameters into a field map (names prefixed by `prefix`: the incremental
/// SVM writes one kernel per machine).
/// \param fm      receives the fields.
/// \param k       the kernel.
/// \param prefix  prepended to every field name.
inline void write_kernel(FieldMap& fm, const Kernel& k, const std::string& prefix = "") {
  fm.set_int(prefix + "kernel.type", static_cast<std::int64_t>(k.type()));
  fm.set(prefix + "kernel.gamma", k.gamma());
  fm.set_int(prefix + "kernel.degree", k.degree());
  fm.set(prefix + "kernel.coef0", k.coef0());
}

/// The kernel that write_kernel wrote, with its parameters validated.
/// \param fm      a model file's fields.
/// \param prefix  as given to write_kernel.
/// \return the kernel.
/// \throws std::runtime_error ("model file: ...") on a missing field or invalid parameters.
inline Kernel read_kernel(const FieldMap& fm, const std::string& prefix = "") {
  const KernelType t = detail::enum_from_code(kernel_names, fm.get_i64(prefix + "kernel.type"), "kernel");
  // range-checked before the cast: 2^32 + 3 would otherwise load as degree 3
  const auto degree = fm.get_i64(prefix + "kernel.degree");
  if (degree < (std::numeric_limits<int>::min)() || degree > (std::numeric_limits<int>::max)())
    detail::corrupt("invalid kernel degree " + std::to_string(degree));
  try {
    return Kernel(t, fm.get_f64(prefix + "kernel.gamma"), static_cast<int>(degree),
                  fm.get_f64(prefix + "kernel.coef0"));
  } catch (const std::invalid_argument& e) {
    detail::corrupt(std::string("invalid kernel parameters: ") + e.what());
  }
}

/// The store's SVs as budgetkernel::Model reads them (sv.x, sv.alpha raw coefficients) plus
/// their ids.
/// \param fm  receives the fields.
/// \param sv  the store.
inline void write_svs(FieldMap& fm, const SupportVectors& sv) {
  const Index n = sv.size();
  fm.set_matrix("sv.x", sv.X().topRows(n));
  fm.set_matrix("sv.alpha", sv.A().topRows(n));
  fm.set_ints("sv.id", std::vector<std::int64_t>(sv.ids().begin(), sv.ids().begin() + n));
}

/// write_svs' fields back into `sv` (capacity at least `capacity`), checked: dim columns,
/// n_outputs coefficient columns, at most max_size rows (0: no limit), every row usable input
/// (detail::row_problem) and finite coefficients. \throws std::runtime_error ("model file: ...").
/// \param fm         a model file's fields.
/// \param dim        the number of features the SVs must have.
/// \param n_outputs  the coefficient columns they must have.
/// \param max_size   the most SVs allowed (the budget), 0 for no limit.
/// \param capacity   the store's capacity after the read.
/// \param sv         receives the SVs.
inline void read_svs(const FieldMap& fm, Index dim, Index n_outputs, Index max_size, Index capacity,
                     SupportVectors& sv) {
  const RowMatrix X = fm.get_matrix("sv.x", -1, dim);
  const RowMatrix A = fm.get_matrix("sv.alpha", X.rows(), n_outputs);
  const auto ids = fm.get_ints("sv.id", X.rows());
  if (max_size > 0 && X.rows() > max_size) detail::corrupt("more support vectors than the budget");
  if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(A.data(), A.size()))
    detail::corrupt("non-finite (or overflowing) support vectors or non-finite coefficients");
  sv.assign(X, A, ids, capacity);
}

/// A learner-independent predictor read from any model file: a kernel expansion
/// f(x) = scale * A^T k(SV, x) + bias (or, for linear learners, W^T x + bias).
/// Enough for an embedding program to predict exactly what the Python model predicts.
class Model {
 public:
  /// \param fm  the fields of a model file of any learner (FieldMap::from_bytes).
  /// \throws std::runtime_error ("model file: ...") on missing fields, impossible dimensions or
  ///         non-finite values.
  explicit Model(const FieldMap& fm) : m_fields(fm) {
    m_learner = fm.get_bytes("learner");
    m_d = fm.get_i64("n_features");
    m_outputs = fm.get_i64("n_outputs");
    // Bounded before anything is sized by them (a few-KB file asked for a 2 GB bias row).
    if (m_d < 1 || m_outputs < 1 || m_d > (std::int64_t{1} << 40) || m_outputs > (std::int64_t{1} << 24))
      detail::corrupt("invalid dimensions");
    m_bias = fm.has("bias") ? fm.get_matrix("bias", 1, m_outputs) : RowMatrix::Zero(1, m_outputs);
    if (!detail::all_finite(m_bias.data(), m_bias.size())) detail::corrupt("non-finite bias");
    bool averaged = false;
    if (fm.has("weights")) {
      m_linear = true;
      m_w = fm.get_matrix("weights", m_d, m_outputs);
      if (!detail::all_finite(m_w.data(), m_w.size())) detail::corrupt("non-finite weights");
    } else {
      m_kernel = read_kernel(fm);
      // An averaged learner predicts with its averaged coefficients (absolute units, scale 1),
      // on its own SVs (predict.x) when the average holds SVs the model no longer has.
      const RowMatrix X = fm.get_matrix(fm.has("predict.x") ? "predict.x" : "sv.x", -1, m_d);
      averaged = fm.has("predict.alpha");
      const RowMatrix A = fm.get_matrix(averaged ? "predict.alpha" : "sv.alpha", X.rows(), m_outputs);
      // as read_svs checks the learners' own fields (predict.* are read by this class only)
      if (!detail::rows_usable(X.data(), X.rows(), X.cols()) || !detail::all_finite(A.data(), A.size()))
        detail::corrupt("non-finite (or overflowing) support vectors or non-finite coefficients");
      m_sv.assign(X, A, std::vector<std::int64_t>(static_cast<std::size_t>(X.rows()), 0), X.rows());
    }
    m_scale = averaged ? 1.0 : fm.get_f64("scale");
    if (!std::isfinite(m_scale)) detail::corrupt("non-finite scale");
  }

  /// \return the name of the learner that wrote the file ("bsgd", "pa", ...).
  const std::string& learner() const { return m_learner; }
  /// \return the number of values every input row must have.
  Index n_features() const { return m_d; }
  /// \return the columns of decision_function: 1 for two classes, else the number of classes.
  Index n_outputs() const { return m_outputs; }
  /// \return the number of support vectors predictions use (0 for a linear model).
  Index n_support() const { return m_linear ? 0 : m_sv.size(); }
  /// \return every field of the file, e.g. "meta" (the Python estimator's state as JSON).
  const FieldMap& fields() const { return m_fields; }

  /// Decision values, n x n_outputs (one column for a binary model). Computed exactly as
  /// the learners compute them (same kernel row, same reduction), so values match bitwise.
  /// `stop` (may be null) can end a long call between rows (Interrupted, stop_poll.hpp).
  /// \param X     the examples, one per row, n_features() columns.
  /// \param stop  null, or the poll that can cancel the call.
  /// \return X.rows() x n_outputs() decision values.
  /// \throws std::invalid_argument if X has another number of columns.
  RowMatrix decision_function(const RowMatrix& X, StopPoll* stop = nullptr) const {
    detail::require(X.cols() == m_d, "decision_function: X has " + std::to_string(X.cols()) +
                                         " features, the model expects " + std::to_string(m_d));
    RowMatrix out(X.rows(), m_outputs);
    Vector krow(std::max<Index>(m_sv.size(), 1)), f(m_outputs);
    // Row i; `dots`: its dot products with the SVs when computed per block, as the learners'
    // decision_rows do (OnlineLearner::decision_function), else null.
    const auto score = [&](Index i, const double* dots) {
      if (m_linear) {
        f.noalias() = m_w.transpose() * X.row(i).transpose();
      } else if (m_sv.empty()) {
        f.setZero();
      } else {
        m_sv.kernel_row(m_kernel, X.row(i).transpose(), X.row(i).squaredNorm(), krow, dots);
        m_sv.scores(krow, f);
      }
      f *= m_scale;
      out.row(i) = f.transpose() + m_bias.row(0);
    };
    if (!m_linear && m_d >= detail::kDotBlockMinDim) {
      RowMatrix D;
      detail::for_row_blocks(X.rows(), m_sv.size(), stop, [&](Index i, Index b) {
        m_sv.dots_rows(X.middleRows(i, b), D);
        for (Index r = 0; r < b; ++r) score(i + r, m_sv.empty() ? nullptr : D.row(r).data());
      });
    } else {
      for (Index i = 0; i < X.rows(); ++i) {
        detail::poll_stop(stop, i);
        score(i, nullptr);
      }
    }
    return out;
  }

 private:
  FieldMap m_fields;
  std::string m_learner;
  Index m_d = 0, m_outputs = 0;
  bool m_linear = false;
  Kernel m_kernel;
  SupportVectors m_sv;
  Eigen::MatrixXd m_w;
  RowMatrix m_bias;
  double m_scale = 1.0;
};

/// Reads a model file written by any budgetkernel learner (C++ or Python).
/// \param path  the file.
/// \return the predictor.
/// \throws std::runtime_error if the file cannot be read or is not a valid model.
inline Model load_model(const std::string& path) { return Model(FieldMap::from_bytes(read_file_bytes(path))); }

}  // namespace budgetkernel
