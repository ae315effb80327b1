#pragma once
/// \file learners/tvm_io.hpp
/// Part of learners/twin_vector_machine.hpp (included at its end; include that header, not
/// this one): the TVM's exact state in a model file (io.hpp) and back. Every field is always
/// written (format v1, tests/data/format_v1/) and load() requires each.

#include <cmath>
#include <string>
#include <vector>

namespace budgetkernel {

inline void TwinVectorMachine::save(FieldMap& fm) const {
  write_base(fm, "tvm");
  write_kernel(fm, m_p.kernel);
  fm.set_int("tvm.budget", m_p.budget);
  fm.set("tvm.C", m_p.C);
  fm.set("tvm.m1", m_p.m1);
  fm.set("tvm.m2", m_p.m2);
  fm.set_int("tvm.merge", static_cast<std::int64_t>(m_p.merge));
  fm.set_int("tvm.one_sided", m_p.one_sided ? 1 : 0);
  fm.set("tvm.rejection_eta", m_p.rejection_eta);
  fm.set_int("tvm.fixed_C_total", m_p.fixed_C_total ? 1 : 0);
  fm.set_int("tvm.random_baseline", m_p.random_baseline ? 1 : 0);
  fm.set_int("tvm.seed", static_cast<std::int64_t>(m_p.seed));
  fm.set("tvm.ridge", m_p.ridge);
  fm.set_bytes("rng", detail::rng_state(m_rng));
  RowMatrix bias(1, n_outputs());
  for (Index k = 0; k < n_outputs(); ++k) {
    const detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
    const std::string pre = "tvm.m" + std::to_string(k) + ".";
    const Index n = tw.size();
    RowMatrix S(n, 2);
    std::vector<std::int64_t> keys(static_cast<std::size_t>(2 * n));
    for (Index j = 0; j < n; ++j) {
      S(j, 0) = tw.s_plus(j);
      S(j, 1) = tw.s_minus(j);
      keys[static_cast<std::size_t>(2 * j)] = tw.key_plus(j);
      keys[static_cast<std::size_t>(2 * j + 1)] = tw.key_minus(j);
    }
    fm.set_matrix(pre + "q", tw.points().topRows(n));
    fm.set_matrix(pre + "s", S);
    fm.set_ints(pre + "keys", keys);
    m_svm[static_cast<std::size_t>(k)].save(fm, pre + "svm.");
    bias(0, k) = m_svm[static_cast<std::size_t>(k)].bias();
  }
  fm.set("scale", 1.0);
  fm.set_matrix("sv.x", twin_points());
  fm.set_matrix("sv.alpha", twin_coefficients());
  fm.set_matrix("bias", bias);
}

inline void TwinVectorMachine::load(const FieldMap& fm) {
  TVMParams p;
  p.kernel = read_kernel(fm);
  p.budget = fm.get_i64("tvm.budget");
  p.C = fm.get_f64("tvm.C");
  p.m1 = fm.get_f64("tvm.m1");
  p.m2 = fm.get_f64("tvm.m2");
  p.merge = detail::enum_from_code(tvm_merge_names, fm.get_i64("tvm.merge"), "merge");
  p.one_sided = read_flag(fm, "tvm.one_sided");
  p.rejection_eta = fm.get_f64("tvm.rejection_eta");
  p.fixed_C_total = read_flag(fm, "tvm.fixed_C_total");
  p.random_baseline = read_flag(fm, "tvm.random_baseline");
  p.seed = static_cast<std::uint64_t>(fm.get_i64("tvm.seed"));
  p.ridge = fm.get_f64("tvm.ridge");
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    detail::corrupt(e.what());
  }
  const auto [d, c] = detail::read_dims(fm, [](Index k) { return "tvm.m" + std::to_string(k) + ".svm.dim"; });
  reset(d, c, p);
  read_base(fm, "tvm");
  detail::set_rng_state(m_rng, fm.get_bytes("rng"));
  sync_rng_undo();
  for (Index k = 0; k < n_outputs(); ++k) load_machine(fm, k);
}

inline bool TwinVectorMachine::read_flag(const FieldMap& fm, const std::string& name) {
  const auto v = fm.get_i64(name);
  if (v != 0 && v != 1) detail::corrupt("field '" + name + "' must be 0 or 1");
  return v == 1;
}

inline void TwinVectorMachine::load_machine(const FieldMap& fm, Index k) {
  IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
  detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
  const std::string pre = "tvm.m" + std::to_string(k) + ".";
  const RowMatrix Q = fm.get_matrix(pre + "q", -1, m_d);
  const Index n = Q.rows();
  const RowMatrix S = fm.get_matrix(pre + "s", n, 2);
  const auto keys = fm.get_ints(pre + "keys", 2 * n);
  if (n > m_p.budget) detail::corrupt("more twin vectors than the budget");
  if (!detail::all_finite(Q.data(), Q.size())) detail::corrupt("non-finite twin vector");
  try {
    svm.load(fm, pre + "svm.");
  } catch (const std::invalid_argument& e) {
    detail::corrupt(std::string("invalid machine: ") + e.what());
  }
  if (svm.dim() != m_d) detail::corrupt("machine dimension differs from n_features");
  if (svm.ridge() != m_p.ridge) detail::corrupt("machine ridge differs from the learner's");
  const Kernel& kern = svm.kernel();
  if (kern.type() != m_p.kernel.type() || kern.gamma() != m_p.kernel.gamma() || kern.degree() != m_p.kernel.degree() ||
      kern.coef0() != m_p.kernel.coef0())
    detail::corrupt("machine kernel differs from the learner's");
  Index sides = 0;
  for (Index j = 0; j < n; ++j) {
    const double w[2] = {S(j, 0), S(j, 1)};
    if (!(w[0] >= 0.0 && w[1] >= 0.0 && std::isfinite(w[0]) && std::isfinite(w[1]) && w[0] + w[1] > 0.0))
      detail::corrupt("invalid twin weights");
    if (m_p.random_baseline && w[0] + w[1] != 1.0) detail::corrupt("invalid weight of a Random-baseline example");
    tw.set_twin(j, Q.row(j).data(), w[0], w[1]);
    std::int64_t kk[2] = {keys[static_cast<std::size_t>(2 * j)], keys[static_cast<std::size_t>(2 * j + 1)]};
    for (int side = 0; side < 2; ++side) {
      if (w[side] == 0.0) {
        if (kk[side] != detail::TwinSet::no_key) detail::corrupt("key of a twin side of weight 0");
        continue;
      }
      Index i = -1;
      try {
        i = svm.index_of(kk[side]);
      } catch (const std::exception&) {
        detail::corrupt("twin key not in the machine");
      }
      if (i < 0 || i >= svm.size() || svm.y(i) != (side == 0 ? 1.0 : -1.0) || svm.weight(i) != w[side] ||
          svm.X().row(i) != Q.row(j))
        detail::corrupt("twin vector does not match the machine's example");
      ++sides;
    }
    tw.set_keys(j, kk[0], kk[1]);
  }
  if (sides != svm.size()) detail::corrupt("machine holds examples that are no twin side");
  const double Ct = m_p.fixed_C_total && !m_p.random_baseline ? target_C(tw) : m_p.C;
  if (svm.C() != Ct) detail::corrupt("machine C differs from the C the twins imply");
  if (m_p.random_baseline) return;
  set_fvals(svm, tw);
  tw.rebuild_partners();
}

}  // namespace budgetkernel
