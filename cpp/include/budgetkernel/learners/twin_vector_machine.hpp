#pragma once
/// \file learners/twin_vector_machine.hpp
/// Twin Vector Machine (Wang & Vucetic, "Twin Vector Machines for Online Learning on a
/// Budget", SDM 2009; the TVM paper) and the paper's "Random" baseline. Section and
/// algorithm numbers refer to that paper.
///
/// A twin vector TV_j = {(q_j, +1, s_j+), (q_j, -1, s_j-)} is a prototype q_j with the
/// numbers s_j+ / s_j- of positive / negative examples it summarises (section 3.1). The
/// model is an exact weighted SVM (IncrementalSVM: alpha <= C s) trained on the two weighted
/// examples of every twin; a side of weight 0 is not stored in the machine. TVM(x) is the
/// machine's decision value.
///
/// Per example (Algorithm 1): Beneficial (Algorithm 2: fewer than B twins or |TVM(x)| <= m1),
/// then UpdateTV (Algorithm 3: add the overflow twin while there is room; else replace the
/// twin with the largest |TVM(q_j)| if it exceeds m2; else merge the best pair among the B + 1
/// twins, the overflow twin TV_{B+1} included, and put the overflow twin in the freed slot, or,
/// when the best pair is (TV_p, TV_{B+1}), merge the overflow twin into TV_p), then UpdateTVM
/// (decremental unlearning of the removed twin sides, control of C, incremental learning of
/// the new ones).
///
/// Why the overflow twin is a merge candidate: Algorithm 3 picks "the best pair TV_i, TV_j
/// (i < j)" right after creating TV_{B+1}, which reads naturally over all B + 1 twins (for
/// j = B + 1, "TV_i = merged; TV_j = TV_{B+1}" leaves only the merged twin). With pairs among
/// the B stored twins only, nothing in the merge choice depends on the new example: once
/// Rejection (4.2.4) refuses every stored pair it refuses them for every later overflow too,
/// and the model never changes again.
///
/// Multi-class (c > 2): one-vs-rest, c independent TVMs. Machine k has its OWN twin set
/// (budget B each, so up to c B twins in all) and sees the whole stream with y = +1 for class
/// k and -1 otherwise; Beneficial, removal, merging and the control of C run per machine.
/// n_twins(), twin_points() and twin_weights() stack the machines' twins (machine 0 first);
/// twin_weights() has 2 columns per machine (s+ of machine k in column 2k, s- in 2k + 1),
/// zero in the other machines' columns. Binary: one machine.
///
/// Costs per example: Beneficial O(B d) (one decision value per machine); an update O(B^2)
/// per adiabatic IDSVM bookkeeping step (unlearning, set_C, learning) plus the merging
/// bookkeeping, O(B d) expected (see detail::TwinSet in budget/twin_set.hpp), one O(B d)
/// scan for the overflow twin's best partner, plus at most merge_tries decision values
/// O(B d) for Rejection. Feature-space merging adds a 1-D solve per pair evaluated (RBF:
/// pruned by a one-exp lower bound; polynomial: ~100 O(1) evaluations).
///
/// Counters: updates = examples that changed some machine's twin set; maintenance = removals
/// plus merges (summed over machines); labels = examples some machine found Beneficial (the
/// others were not needed: Beneficial looks at |TVM(x)| only); degradation stays 0 (a
/// combine adds the distortion of its merges, learners/tvm_combine.hpp).
///
/// Failure: when an IncrementalSVM operation throws (std::runtime_error, a numerical
/// breakdown, see its header), step() leaves the learner exactly as before the call (twin
/// sets, machines, counters, generator) and rethrows: one UpdateTVM is several machine
/// operations (unlearns, set_C, learns) after the twin set already changed, so each machine
/// it touches runs them inside one IncrementalSVM transaction and its twin set is copied
/// first (O(B d), small next to the update's O(B^2) steps); a failure in machine k rolls back
/// machines 0..k of the step. In a chunk (partial_fit) the examples before the failing one
/// stay learned and the exception says how many they are. TVMParams::ridge > 0 trains every
/// machine on K + ridge I (IncrementalSVM's ridge; decision values, TVM(x) and TVM(q_j), use
/// the plain kernel), the way around that breakdown on a numerically rank-deficient kernel
/// matrix. The two sides of a twin are two stored examples: each gets the ridge.
///
/// The "Random" baseline (TVMParams::random_baseline): an IDSVM on a reservoir sample of the
/// stream (Vitter's Algorithm R: example t > B replaces slot j = uniform[0, t) when j < B),
/// every kept example a weight-1 example; the same slot decision for all machines.

#include "../budget/twin_set.hpp"
#include "../detail/random.hpp"
#include "../svm/incremental_svm.hpp"
#include "combine.hpp"
#include "learner_base.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace budgetkernel {

namespace detail {
class TwinPool;  // learners/tvm_combine.hpp
}  // namespace detail

/// Parameters of the Twin Vector Machine (defaults: the paper's, section 5.2).
struct TVMParams {
  Kernel kernel{KernelType::RBF, 1.0};
  Index budget = 100;          ///< B >= 1 twin vectors (per machine)
  double C = 1.0;              ///< slack parameter (with fixed_C_total: the C of the first B examples)
  double m1 = 1.0;             ///< Beneficial threshold (Algorithm 2), finite, >= 0
  double m2 = 2.0;             ///< removal threshold of UpdateTV (Algorithm 3), m2 > m1 (+inf: never remove)
  TVMMerge merge = TVMMerge::Input;
  bool one_sided = true;       ///< One-Sided merging (4.2.3); false = Global
  double rejection_eta = 0.2;  ///< Rejection (4.2.4); < 0 = off
  /// 4.3: keep C_t * sum_j (s_j+ + s_j-) = C * B, i.e. C_t = C * B / max(B, sum_j s_j).
  bool fixed_C_total = true;
  bool random_baseline = false;  ///< the paper's "Random": an IDSVM on a reservoir sample of size B
  std::uint64_t seed = 0;        ///< seeds the reservoir sampling of the Random baseline
  double ridge = 0.0;            ///< machines train on K + ridge I (IncrementalSVM); 0 = exact SVM

  void validate() const {
    detail::require(budget >= 1, "budget must be >= 1");
    detail::require_positive(C, "C");
    detail::require_non_negative(m1, "m1");
    detail::require(!std::isnan(m2) && m2 > m1, "m2 must be greater than m1 (a buffer zone, paper 4.1)");
    detail::require_enum(tvm_merge_names, merge, "merge");
    detail::require(std::isfinite(rejection_eta), "rejection_eta must be finite (< 0 turns Rejection off)");
    detail::require_non_negative(ridge, "ridge");
  }
};

/// Twin Vector Machine (Algorithms 1-3 of the TVM paper) and the Random baseline; see the
/// file comment for the multi-class layout.
class TwinVectorMachine : public OnlineLearner<TwinVectorMachine> {
 public:
  /// Merge candidates tested by Rejection (4.2.4) before the overflow twin is ignored: the
  /// best pair and up to 9 next-best ones (each test costs one decision value, O(B d)).
  static constexpr Index merge_tries = 10;

  TwinVectorMachine() { reset(1, 2, TVMParams()); }
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  TwinVectorMachine(Index n_features, Index n_classes, const TVMParams& params) {
    reset(n_features, n_classes, params);
  }

  /// \throws std::invalid_argument on invalid parameters or dimensions.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  void reset(Index n_features, Index n_classes, const TVMParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    m_rng.seed(params.seed);
    sync_rng_undo();
    const Index c = n_outputs();
    m_svm.clear();
    m_tw.clear();
    for (Index k = 0; k < c; ++k) {
      m_svm.emplace_back(n_features, params.kernel, params.C, params.ridge);
      m_tw.emplace_back();
      m_tw.back().reset(n_features, params.budget, params.kernel, params.merge, params.one_sided);
    }
    m_tw_undo.assign(static_cast<std::size_t>(c), detail::TwinSet());
    m_f.setZero(c);
    m_z.setZero(n_features);
  }

  const TVMParams& params() const { return m_p; }

  /// Predicts with the current machines, then runs Algorithm 1 (or the reservoir step of the
  /// Random baseline) on every machine. Returns the prediction.
  /// \throws std::runtime_error on a numerical breakdown of a machine (see IncrementalSVM); the
  ///         learner is then exactly as before the call (see "Failure" in the file comment).
  /// \param x  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* x, std::int32_t y) {
    const Index c = n_outputs();
    for (Index k = 0; k < c; ++k) m_f(k) = m_svm[static_cast<std::size_t>(k)].decision(x);
    const std::int32_t pred = detail::predict_from_scores(m_f);
    note_scores(m_f);
    const Counters count = m_count;
    const std::int64_t t = ++m_count.examples;
    bool changed = false, used_label = false, hit = false;
    try {
      if (m_p.random_baseline) {
        Index slot = -1;
        const Index n = m_tw[0].size();
        if (n < m_p.budget) {
          slot = n;
        } else {
          CountingEngine draw{m_rng};
          const Index j = detail::uniform_index(draw, static_cast<Index>(t));  // Algorithm R
          if (j < m_p.budget) {
            // The replacement below can fail, and a failed step must not consume its draw:
            // bring the lagging copy to the generator's state before this draw.
            slot = j;
            hit = true;
            m_rng_undo.discard(m_rng_lag);
            m_rng_lag = draw.n;
          } else {
            m_rng_lag += draw.n;  // a miss changes nothing that could fail
          }
        }
        if (slot >= 0) {
          for (Index k = 0; k < c; ++k) {
            begin_update(k);
            replace_twin(k, slot, x, label_of(k, y));
          }
          changed = used_label = true;
        }
      } else {
        for (Index k = 0; k < c; ++k) {
          const detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
          if (!(tw.size() < m_p.budget || std::fabs(m_f(k)) <= m_p.m1)) continue;  // Algorithm 2
          used_label = true;
          begin_update(k);
          const double sp = label_of(k, y) > 0.0 ? 1.0 : 0.0;  // the overflow twin TV_{B+1}
          changed = update_machine(k, x, sp, 1.0 - sp, m_f(k)) || changed;
        }
      }
    } catch (...) {
      // Every machine that began this step goes back, with its twin set (they must agree).
      for (Index k = 0; k < c; ++k) {
        IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
        if (!svm.in_transaction()) continue;
        svm.rollback();
        std::swap(m_tw[static_cast<std::size_t>(k)], m_tw_undo[static_cast<std::size_t>(k)]);
      }
      m_count = count;
      if (hit) {
        m_rng = m_rng_undo;  // the state before this step's draw
        m_rng_lag = 0;
      }
      throw;
    }
    for (auto& svm : m_svm) svm.commit();
    if (changed) ++m_count.updates;
    m_label_unused = !used_label;  // Beneficial needs no label (active-learning reading)
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
    // Python's ReservoirSVC is this class with random_baseline: name what the user built.
    const char* who = m_p.random_baseline ? "TwinVectorMachine::partial_fit (random baseline, ReservoirSVC)"
                                          : "TwinVectorMachine::partial_fit";
    detail::report_chunk_failure(who, m_count.examples, [&] { OnlineLearner::partial_fit(X, y, pred, stop); });
  }

  /// Decision values TVM_k(x) of one example (n_outputs values).
  /// \param x    n_features() values.
  /// \param out  receives n_outputs() decision values.
  void decision(const double* x, double* out) const {
    for (Index k = 0; k < n_outputs(); ++k) out[k] = m_svm[static_cast<std::size_t>(k)].decision(x);
  }

  /// decision() for every row of X into the rows of out, bit for bit, with each machine's dot
  /// products (with its own twins) taken per block of rows (detail::for_row_blocks).
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    thread_local std::vector<RowMatrix> D;
    D.resize(m_svm.size());
    Index n = 0;
    for (const IncrementalSVM& svm : m_svm) n += svm.size();
    detail::for_row_blocks(X.rows(), n, stop, [&](Index i, Index b) {
      for (std::size_t k = 0; k < m_svm.size(); ++k) m_svm[k].dots_rows(X.middleRows(i, b), D[k]);
      for (Index r = 0; r < b; ++r)
        for (std::size_t k = 0; k < m_svm.size(); ++k)
          out(i + r, static_cast<Index>(k)) = m_svm[k].decision(X.row(i + r).data(), D[k].row(r).data());
    });
  }

  /// Twins of all machines (binary: of the one machine).
  Index n_twins() const {
    Index n = 0;
    for (const auto& tw : m_tw) n += tw.size();
    return n;
  }
  /// Twins of machine k.
  /// \param k  the machine's index.
  /// \return its number of twins.
  Index n_twins(Index k) const { return twins(k).size(); }

  /// q_j, one row per twin, machines stacked (machine 0 first).
  RowMatrix twin_points() const {
    RowMatrix Q(n_twins(), m_d);
    Index r = 0;
    for (const auto& tw : m_tw) {
      Q.middleRows(r, tw.size()) = tw.points().topRows(tw.size());
      r += tw.size();
    }
    return Q;
  }

  /// n_twins() x (2 n_outputs): s_j+ of machine k in column 2k, s_j- in column 2k + 1, rows
  /// as twin_points(); zero in the columns of the machines a twin does not belong to.
  RowMatrix twin_weights() const {
    RowMatrix W = RowMatrix::Zero(n_twins(), 2 * n_outputs());
    Index r = 0;
    for (Index k = 0; k < n_outputs(); ++k) {
      const detail::TwinSet& tw = twins(k);
      for (Index j = 0; j < tw.size(); ++j, ++r) {
        W(r, 2 * k) = tw.s_plus(j);
        W(r, 2 * k + 1) = tw.s_minus(j);
      }
    }
    return W;
  }

  /// n_twins() x n_outputs: alpha_j+ - alpha_j- of each twin in its machine's column (the
  /// expansion TVM(x) = sum_j (alpha_j+ - alpha_j-) K(q_j, x) + b of section 3.1).
  RowMatrix twin_coefficients() const {
    RowMatrix A = RowMatrix::Zero(n_twins(), n_outputs());
    Index r = 0;
    for (Index k = 0; k < n_outputs(); ++k) {
      const detail::TwinSet& tw = twins(k);
      const IncrementalSVM& svm = machine(k);
      for (Index j = 0; j < tw.size(); ++j, ++r) {
        double a = 0.0;
        if (tw.key_plus(j) != detail::TwinSet::no_key) a += svm.alpha(svm.index_of(tw.key_plus(j)));
        if (tw.key_minus(j) != detail::TwinSet::no_key) a -= svm.alpha(svm.index_of(tw.key_minus(j)));
        A(r, k) = a;
      }
    }
    return A;
  }

  /// The exact SVM of machine k (trained on its twins).
  /// \param k  the machine's index, < n_outputs().
  /// \return the machine.
  const IncrementalSVM& machine(Index k) const {
    detail::require(k >= 0 && k < n_outputs(), "machine index out of range");
    return m_svm[static_cast<std::size_t>(k)];
  }
  /// Twin set (with its merging bookkeeping) of machine k.
  /// \param k  the machine's index.
  /// \return its twin set.
  const detail::TwinSet& twins(Index k) const {
    detail::require(k >= 0 && k < n_outputs(), "machine index out of range");
    return m_tw[static_cast<std::size_t>(k)];
  }
  /// The C of the machines now: C * B / max(B, sum_j s_j) with fixed_C_total (per machine).
  /// \param k  the machine's index.
  /// \return its C.
  double current_C(Index k) const { return machine(k).C(); }

  /// combine() of one model within `budget` is a copy of it (learners/combine.hpp).
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return n_twins(); }

  /// This model becomes the combination of `models`: the twins, with their counts, pooled
  /// and reduced by the TVM's own merging, its exact SVM retrained on them; the Random
  /// baseline's reservoirs pooled and sampled. The rules: learners/tvm_combine.hpp.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const TwinVectorMachine*>& models, const CombinePlan& plan,
                    const TwinVectorMachine* base, CombineReport& rep);

  /// Exact state (learner "tvm"): resumes bit for bit. Also writes the fields
  /// budgetkernel::Model reads: sv.x (twin_points), sv.alpha (twin_coefficients), bias,
  /// scale = 1 and the kernel.
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const;

  /// \throws std::runtime_error (detail::corrupt) on a field that is missing, malformed or
  ///         inconsistent (twins vs. the machine's examples, weights, budget, C).
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm);

 private:
  static bool read_flag(const FieldMap& fm, const std::string& name);

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const TVMParams& a, const TVMParams& b);
  /// combine_from's pools of the TVM: one per result machine (rule: tvm_combine.hpp).
  static std::vector<detail::TwinPool> pool_twins(const std::vector<const TwinVectorMachine*>& models,
                                                  const CombinePlan& plan, std::int64_t n_total);
  /// The class of the example in slot j of a Random baseline's reservoir (the machine that
  /// has it as a positive; binary: class 1 iff positive).
  std::int32_t reservoir_class(Index j) const;
  /// combine_from's pool of the Random baseline: the labelled examples of the reservoirs;
  /// rows[k] = model k's as rows of the pool.
  static std::vector<detail::TwinPool> pool_reservoirs(const std::vector<const TwinVectorMachine*>& models,
                                                       const CombinePlan& plan, std::vector<std::vector<Index>>& rows);
  /// The pooled twins into machine k through UpdateTV + UpdateTVM (see combine_from).
  void feed_machine(Index k, const detail::TwinPool& pool, CombineReport& rep);
  /// The pool rows the combined reservoir keeps, in pool order: all within the budget, else
  /// `budget` drawn from the models' reservoirs rows[k] (see combine_from) with m_rng.
  std::vector<Index> sample_reservoir(const detail::TwinPool& pool, std::vector<std::vector<Index>> rows,
                                      const CombinePlan& plan, std::int64_t n_total, CombineReport& rep);
  /// The kept examples of the pooled reservoir into slots 0, 1, ... of every machine.
  void fill_reservoir(const detail::TwinPool& pool, const std::vector<Index>& keep);

  /// +1 / -1 label of machine k (binary: class 1 is positive; multi-class: one-vs-rest).
  double label_of(Index k, std::int32_t y) const {
    if (n_outputs() == 1) return y == 1 ? 1.0 : -1.0;
    return y == k ? 1.0 : -1.0;
  }

  /// std::mt19937_64 that counts the outputs it hands out (the Random baseline's draws).
  struct CountingEngine {
    using result_type = std::mt19937_64::result_type;
    static constexpr result_type (min)() { return (std::mt19937_64::min)(); }
    static constexpr result_type (max)() { return (std::mt19937_64::max)(); }
    result_type operator()() {
      ++n;
      return g();
    }
    std::mt19937_64& g;
    unsigned long long n = 0;
  };

  /// Makes the undo copy of the generator equal to it (no lag).
  void sync_rng_undo() {
    m_rng_undo = m_rng;
    m_rng_lag = 0;
  }

  /// Opens the undo of machine k's update in this step: a copy of its twin set (O(B d), no
  /// allocation once the copy has the set's sizes) and a transaction of its IncrementalSVM
  /// (whose journal costs O(B |S| + |S|^2) once, the order of one bookkeeping step).
  void begin_update(Index k) {
    m_tw_undo[static_cast<std::size_t>(k)] = m_tw[static_cast<std::size_t>(k)];
    m_svm[static_cast<std::size_t>(k)].begin_transaction();
  }

  /// Decremental unlearning of both sides of twin j (UpdateTVM).
  void unlearn_twin(IncrementalSVM& svm, detail::TwinSet& tw, Index j) {
    if (tw.key_plus(j) != detail::TwinSet::no_key) svm.unlearn(tw.key_plus(j));
    if (tw.key_minus(j) != detail::TwinSet::no_key) svm.unlearn(tw.key_minus(j));
    tw.set_keys(j, detail::TwinSet::no_key, detail::TwinSet::no_key);
  }

  /// Incremental learning of the sides of twin j with positive weight (UpdateTVM).
  void learn_twin(IncrementalSVM& svm, detail::TwinSet& tw, Index j) {
    const double* q = tw.points().data() + j * m_d;
    const std::int64_t kp = tw.s_plus(j) > 0.0 ? svm.learn(q, 1.0, tw.s_plus(j)) : detail::TwinSet::no_key;
    const std::int64_t km = tw.s_minus(j) > 0.0 ? svm.learn(q, -1.0, tw.s_minus(j)) : detail::TwinSet::no_key;
    tw.set_keys(j, kp, km);
  }

  /// Random baseline: the example (x, yk) as a weight-1 example in slot `slot`.
  void replace_twin(Index k, Index slot, const double* x, double yk) {
    IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
    detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
    if (slot < tw.size()) unlearn_twin(svm, tw, slot);
    tw.set_twin(slot, x, yk > 0.0 ? 1.0 : 0.0, yk > 0.0 ? 0.0 : 1.0);
    learn_twin(svm, tw, slot);
  }

  /// UpdateTV (Algorithm 3) + UpdateTVM for the twin (x, sp, sm) entering machine k, fx =
  /// TVM_k(x): a beneficial example (counts 1, 0 or 0, 1), or a pooled twin of combine_from.
  /// Returns whether the twin set changed (false: the overflow twin was ignored by Rejection).
  /// `distortion` (may be null) receives the chosen pair's distortion when two twins merge.
  bool update_machine(Index k, const double* x, double sp, double sm, double fx, double* distortion = nullptr);

  double target_C(const detail::TwinSet& tw) const {
    const double B = static_cast<double>(m_p.budget);
    return m_p.C * B / (std::max)(B, tw.total_weight());
  }

  /// TVM(q_j) of every twin (O(1) each from the machine), then the merging bookkeeping.
  static void refresh(const IncrementalSVM& svm, detail::TwinSet& tw) {
    set_fvals(svm, tw);
    tw.update_partners();
  }
  /// TVM(q_j) of every twin, from the machine's g of either side (O(1) each).
  static void set_fvals(const IncrementalSVM& svm, detail::TwinSet& tw) {
    for (Index j = 0; j < tw.size(); ++j) {
      const std::int64_t key = tw.key_plus(j) != detail::TwinSet::no_key ? tw.key_plus(j) : tw.key_minus(j);
      tw.set_fval(j, svm.decision_at(key));
    }
  }

  /// Machine k and its twin set from the file, checked against each other.
  void load_machine(const FieldMap& fm, Index k);

  TVMParams m_p;
  std::vector<IncrementalSVM> m_svm;
  std::vector<detail::TwinSet> m_tw;
  std::mt19937_64 m_rng;
  // The undo of a step (see "Failure"): the twin sets as before it; for the generator a copy
  // that lags it by m_rng_lag outputs and is brought forward (discard) only when a draw hits,
  // i.e. before an update that can fail: copying the 2.5 KB engine on every draw would be
  // a sizeable part of the Random baseline's cost per example.
  std::vector<detail::TwinSet> m_tw_undo;
  std::mt19937_64 m_rng_undo;
  unsigned long long m_rng_lag = 0;
  Vector m_f, m_z;
};

}  // namespace budgetkernel

#include "tvm_update.hpp"  // TwinVectorMachine::update_machine (UpdateTV + UpdateTVM)
#include "tvm_io.hpp"  // TwinVectorMachine::save and load
#include "tvm_combine.hpp"  // TwinVectorMachine::combine_from and its helpers
