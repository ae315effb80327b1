#pragma once
/// \file learners/linear_pegasos.hpp
/// Linear Pegasos (Shalev-Shwartz, Singer & Srebro, ICML 2007) with mini-batches and the ball
/// projection, binary or Crammer-Singer multi-class. Equation numbers refer to the BSGD paper.

#include "combine.hpp"
#include "learner_base.hpp"
#include "pegasos_common.hpp"

namespace budgetkernel {

/// Linear Pegasos (Shalev-Shwartz et al. 2007) with mini-batches of k examples and the
/// ball projection; binary or Crammer-Singer multi-class (section 2.1 of the BSGD paper).
/// A mini-batch is k consecutive stream examples; all k are scored with w_t before the
/// step, as the algorithm prescribes. With k = 1 it equals kernel Pegasos with the linear
/// kernel (w = sum_j alpha_j x_j).
class LinearPegasos : public OnlineLearner<LinearPegasos> {
 public:
  LinearPegasos() = default;
  /// Constructs the learner: reset(n_features, n_classes, lam, batch_size).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param lam         the regularisation lambda of eq. (1), >= 1e-30; eta_t = 1 / (lambda t).
  /// \param batch_size  k, the examples of one mini-batch step (>= 1).
  /// \throws std::invalid_argument if a value is out of range.
  LinearPegasos(Index n_features, Index n_classes, double lam, Index batch_size) {
    reset(n_features, n_classes, lam, batch_size);
  }

  /// Starts over: w = 0 with these dimensions and parameters, counters at 0.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param lam         the regularisation lambda of eq. (1), >= 1e-30; eta_t = 1 / (lambda t).
  /// \param batch_size  k, the examples of one mini-batch step (>= 1).
  /// \throws std::invalid_argument if a value is out of range.
  void reset(Index n_features, Index n_classes, double lam, Index batch_size) {
    detail::check_lam(lam);
    detail::require(batch_size >= 1, "batch_size must be >= 1");
    init_base(n_features, n_classes);
    m_lam = lam;
    m_k = batch_size;
    m_w.setZero(n_features, n_outputs());
    m_grad.setZero(n_features, n_outputs());
    m_f.setZero(n_outputs());
    m_beta.setZero(n_outputs());
    m_in_batch = 0;
    m_t = 0;
    m_scale = 1.0;
  }

  /// \return the regularisation lambda.
  double lam() const { return m_lam; }
  /// \return k, the mini-batch size.
  Index batch_size() const { return m_k; }
  /// The weight matrix, d x n_outputs.
  Eigen::MatrixXd weights() const { return m_scale * m_w; }
  /// \return the mini-batch steps taken (the Pegasos t).
  std::int64_t iterations() const { return m_t; }

  /// Scores one example with w_t, adds its hinge subgradient to the pending batch, and takes
  /// the step (eq. 2-4 with |A_t| = k) when the batch is full.
  /// \param xp  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* xp, std::int32_t y) {
    const Eigen::Map<const Vector> x(xp, m_d);
    m_f.noalias() = m_w.transpose() * x;
    m_f *= m_scale;
    const std::int32_t pred = detail::predict_from_scores(m_f);
    note_scores(m_f);
    ++m_count.examples;
    if (detail::pegasos_loss(m_f, y, 1.0, m_beta) > 0.0) {
      m_grad.noalias() += x * m_beta.transpose();  // sum over A_t^+ of x beta
      ++m_count.updates;
    }
    if (++m_in_batch == m_k) finish_batch();
    return pred;
  }

  /// Number of examples scored since the last step (the pending partial mini-batch).
  Index pending() const { return m_in_batch; }

  /// Ends the pending partial mini-batch: its examples make one step of their own, averaged
  /// over their number (k = |A_t| in the Pegasos update). A stream fed in chunks keeps
  /// carrying its partial batch into the next chunk (so chunking never changes the model);
  /// a finite data set calls this at the end of each pass, else its last n mod k examples
  /// would never be learned. No-op when nothing is pending.
  void flush() {
    if (m_in_batch > 0) finish_batch();
  }

  /// Decision values W^T x of one example.
  /// \param xp    n_features() values.
  /// \param out  receives n_outputs() decision values.
  void decision(const double* xp, double* out) const {
    const Eigen::Map<const Vector> x(xp, m_d);
    Eigen::Map<Vector> f(out, n_outputs());
    f.noalias() = m_w.transpose() * x;
    f *= m_scale;
  }

  /// combine() of one model is a copy of it; a linear model keeps no SVs, so no budget applies.
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget <= 0; }
  Index combine_size() const { return 0; }

  /// This model becomes sum_k w_k f_k of `models` (learners/combine.hpp): W = sum_k w_k s_k W_k,
  /// exact (the ball ||W|| <= 1/sqrt(lam) is convex, so W stays in it). Pending partial
  /// mini-batches are mixed too, not dropped: the gradient sums by the same weights, their
  /// size as the weighted mean of the models' (at least 1 while a gradient is pending, at
  /// most batch_size - 1), so the next step averages over about as many examples as it sums.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const LinearPegasos*>& models, const CombinePlan& plan,
                    const LinearPegasos* base, CombineReport& rep) {
    detail::require(plan.budget <= 0, "combine: a linear model keeps no support vectors, so no budget applies");
    for (const LinearPegasos* m : models)
      detail::require(m->m_lam == models[0]->m_lam && m->m_k == models[0]->m_k,
                      "combine: the models' lam or batch_size differ");
    reset(models[0]->m_d, plan.n_classes, models[0]->m_lam, models[0]->m_k);
    RowMatrix W = RowMatrix::Zero(m_d, n_outputs()), G = W;
    double in_batch = 0.0;
    for (std::size_t k = 0; k < models.size(); ++k) {
      const LinearPegasos& m = *models[k];
      const RowMatrix Wk = m.m_scale * m.m_w, Gk = m.m_grad;
      for (Index r = 0; r < m_d; ++r) {
        plan.add_row(k, Wk.row(r).data(), Wk.cols(), W.row(r).data());
        plan.add_row(k, Gk.row(r).data(), Gk.cols(), G.row(r).data());
      }
      in_batch += plan.w[k] * static_cast<double>(m.m_in_batch);
    }
    m_w = W;
    m_grad = G;
    const bool pending = !G.isZero(0.0) || in_batch > 0.0;
    if (m_k > 1)  // (with batch_size 1 nothing is ever pending)
      m_in_batch = std::clamp<Index>(static_cast<Index>(std::llround(in_batch)), pending ? 1 : 0, m_k - 1);
    std::vector<const Counters*> counts;
    std::vector<std::int64_t> steps;
    for (const LinearPegasos* m : models) {
      counts.push_back(&m->m_count);
      steps.push_back(m->m_t);
    }
    m_count = detail::combined_counters(counts, base ? &base->m_count : nullptr);
    m_t = detail::combined_count(steps, base ? &base->m_t : nullptr);
    rep.union_size = 0;
    metadata = models[0]->metadata;
  }

  /// Writes every field needed to predict and to resume training (the model file, io.hpp).
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "linear_pegasos");
    fm.set("lam", m_lam);
    fm.set_int("batch_size", m_k);
    fm.set_int("t", m_t);
    fm.set_int("in_batch", m_in_batch);
    fm.set("scale", m_scale);
    fm.set_matrix("weights", m_w);
    fm.set_matrix("pending_grad", m_grad);
  }

  /// Replaces this learner by the one save() wrote, checked field by field.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  /// \throws std::runtime_error ("model file: ...") if they are not a valid model of this learner.
  void load(const FieldMap& fm) {
    const auto [d, c] = detail::read_dims(fm, "weights");
    try {
      reset(d, c, fm.get_f64("lam"), fm.get_i64("batch_size"));
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    read_base(fm, "linear_pegasos");
    m_t = fm.get_i64("t");
    m_in_batch = fm.get_i64("in_batch");
    m_scale = fm.get_f64("scale");
    m_w = fm.get_matrix("weights", d, n_outputs());
    m_grad = fm.get_matrix("pending_grad", d, n_outputs());
    // Invariants of finish_batch: scale in [min_scale, 1], ||scale w||^2 lam <= 1 (the ball
    // projection), and a pending gradient summing at most in_batch rows of squared norm <= 1e300
    // (stableNorm: the plain norm squares past the double range for such rows).
    const double norm2 = m_scale * m_scale * m_w.squaredNorm();
    if (m_t < 0 || m_t > detail::kMaxLoadedCount || m_in_batch < 0 || m_in_batch >= m_k ||
        !(m_scale >= detail::min_scale && m_scale <= 1.0) || !detail::all_finite(m_w.data(), m_w.size()) ||
        !detail::all_finite(m_grad.data(), m_grad.size()) || !(norm2 * m_lam <= 1.0 + 1e-6) ||
        !(m_grad.stableNorm() <= 2.0 * static_cast<double>(m_in_batch) * std::sqrt(detail::kMaxRowSqNorm)))
      detail::corrupt("invalid linear Pegasos state");
  }

 private:
  /// One Pegasos step on the m_in_batch examples scored since the last one (m_k for a full
  /// batch, fewer for a flushed partial one): the gradient is averaged over the batch.
  void finish_batch() {
    ++m_t;
    const double t = static_cast<double>(m_t);
    const double k = static_cast<double>(m_in_batch);
    const double shrink = 1.0 - 1.0 / t;
    const double eta = 1.0 / (m_lam * t);
    if (shrink == 0.0) {
      m_w = (eta / k) * m_grad;
      m_scale = 1.0;
    } else {
      m_scale *= shrink;
      m_w += (eta / (k * m_scale)) * m_grad;
    }
    m_grad.setZero();
    m_in_batch = 0;
    const double norm2 = m_scale * m_scale * m_w.squaredNorm();
    if (!std::isfinite(norm2)) {
      // ||w||^2 beyond the double range (a step of 1/(lambda t) = 1e30 on a row of squared norm
      // 1e280): the projection certainly applies (1/lambda <= 1e30), to ||w|| = 1/sqrt(lambda),
      // with the norm taken without squaring (dividing by sqrt(inf) would give scale 0 and
      // reset w to zero).
      m_scale = 1.0 / (std::sqrt(m_lam) * m_w.stableNorm());
    } else if (norm2 * m_lam > 1.0) {
      m_scale /= std::sqrt(m_lam * norm2);
    }
    if (m_scale < detail::min_scale) {
      m_w *= m_scale;
      m_scale = 1.0;
    }
  }

  double m_lam = 1e-4;
  Index m_k = 1, m_in_batch = 0;
  std::int64_t m_t = 0;
  double m_scale = 1.0;
  Eigen::MatrixXd m_w, m_grad;
  Vector m_f, m_beta;
};

}  // namespace budgetkernel
