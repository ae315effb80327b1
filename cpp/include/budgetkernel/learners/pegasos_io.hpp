#pragma once
/// \file learners/pegasos_io.hpp
/// Part of learners/pegasos.hpp (included at its end; include that header, not this one):
/// KernelPegasos in a model file (io.hpp) and back.
///
/// Format v1 (frozen, tests/data/format_v1/): every field is always written except "loss"
/// (written for the logistic loss only: absent = hinge) and, with averaging off, the averaged
/// coefficients. load() requires every always-written field.

#include <string>

namespace budgetkernel {

/// Writes every field needed to predict and to resume training.
inline void KernelPegasos::save(FieldMap& fm) const {
  write_base(fm, "bsgd");
  write_kernel(fm, m_p.kernel);
  fm.set("lam", m_p.lam);
  fm.set_int("budget", m_p.budget);
  fm.set_int("maintenance", static_cast<std::int64_t>(m_p.maintenance));
  fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
  fm.set_bytes("rng", detail::rng_state(m_rng));
  fm.set("scale", m_scale);
  fm.set("norm2", m_norm2);
  fm.set_int("bound_norm", m_p.bound_norm ? 1 : 0);
  // Written for the logistic loss only: format v1 has no "loss" field for hinge models.
  if (m_p.loss != PegasosLoss::Hinge) fm.set_int("loss", static_cast<std::int64_t>(m_p.loss));
  fm.set_int("norm_exact", norm_exact() ? 1 : 0);
  fm.set_int("norm_since", m_exact_since);
  write_svs(fm, m_sv);
  const Index n = m_sv.size();
  fm.set_int("average_start", m_p.average_start);
  fm.set("average_decay", m_p.average_decay);
  if (m_p.average_start > 0) {
    fm.set_int("average_count", m_avg_count);
    fm.set_matrix("sv.avg", m_sv.C().topRows(n));
    // What budgetkernel::Model predicts with (absolute coefficients, scale 1).
    if (m_avg_count > 0) fm.set_matrix("predict.alpha", m_sv.C().topRows(n));
  }
  m_maint.save(fm);
}

/// Replaces this learner by the one save() wrote, checked field by field.
inline void KernelPegasos::load(const FieldMap& fm) {
  BSGDParams p;
  p.kernel = read_kernel(fm);
  p.lam = fm.get_f64("lam");
  p.budget = fm.get_i64("budget");
  p.maintenance = detail::enum_from_code(maintenance_names, fm.get_i64("maintenance"), "maintenance");
  p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
  p.average_start = fm.get_i64("average_start");
  p.average_decay = fm.get_f64("average_decay");
  p.bound_norm = fm.get_i64("bound_norm") != 0;
  if (fm.has("loss")) {  // absent: hinge (see save)
    p.loss = detail::enum_from_code(pegasos_loss_names, fm.get_i64("loss"), "loss");
    if (p.loss == PegasosLoss::Hinge) detail::corrupt("a hinge model has no 'loss' field");
  }
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    detail::corrupt(e.what());
  }
  const auto [d, c] = detail::read_dims(fm, "sv.alpha");
  reset(d, c, p);
  read_base(fm, "bsgd");
  detail::set_rng_state(m_rng, fm.get_bytes("rng"));
  m_scale = fm.get_f64("scale");
  m_norm2 = fm.get_f64("norm2");
  // Training only shrinks the scale (by 1 - 1/t and the ball projection) and resets it to 1.
  // A step folds the scale back into the coefficients below min_scale: a smaller one is corrupt
  // (5e-324 loaded, and the next step stored beta / scale = inf).
  if (!(m_scale >= detail::min_scale && m_scale <= 1.0) || !(m_norm2 >= 0.0) || !std::isfinite(m_norm2))
    detail::corrupt("invalid scale or norm");
  const bool exact = fm.get_i64("norm_exact") != 0;
  m_exact_since = fm.get_i64("norm_since");
  if (m_exact_since < 0 || m_exact_since > m_count.examples || (!exact && !m_maint.can_skip_norm()))
    detail::corrupt("invalid norm tracking state");
  read_svs(fm, d, n_outputs(), p.budget, p.budget > 0 ? p.budget + 1 : 64, m_sv);
  const Index n = m_sv.size();
  if (p.average_start > 0) {
    m_avg_count = fm.get_i64("average_count");
    const RowMatrix C = fm.get_matrix("sv.avg", n, n_outputs());
    if (m_avg_count < 0 || m_avg_count > m_count.examples || !detail::all_finite(C.data(), C.size()))
      detail::corrupt("invalid averaged coefficients");
    m_sv.set_carry_columns(n_outputs());
    m_sv.C().topRows(n) = C;
  }
  resize_work(m_sv.capacity());
  m_maint.track_norm(exact, m_sv);  // before load: no cache to rebuild without tracking
  m_maint.load(fm, m_sv, p.kernel);
}

}  // namespace budgetkernel
