// Register-tiled dot products (detail/dot_block.hpp): every value depends on its two rows
// only, so scoring a chunk in blocks gives each learner's per-row decision values bit for bit,
// and budgetkernel::Model agrees with the learner; against a long-double oracle to rounding.
#include <budgetkernel/budgetkernel.hpp>

#include <cstdint>
#include <cstring>
#include <random>

#include "test_oracles.hpp"
#include "test_util.hpp"

using namespace budgetkernel;

namespace {

RowMatrix gaussian(Index n, Index d, std::uint64_t seed) { return bk_test::random_matrix(n, d, seed); }

bool same_bits(const RowMatrix& a, const RowMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

// A labelled stream in d dimensions whose labels need a nonlinear rule (sign of x0 * x1 + noise).
struct Highd {
  RowMatrix X;
  std::vector<std::int32_t> y;
};
Highd stream(Index n, Index d, int n_classes, std::uint64_t seed) {
  Highd s{gaussian(n, d, seed), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  std::mt19937_64 rng(seed + 1);
  std::uniform_int_distribution<int> noise(0, 9);
  for (Index i = 0; i < n; ++i) {
    int label = (s.X(i, 0) * s.X(i, 1) > 0.0 ? 1 : 0) + (n_classes > 2 && s.X(i, 2) > 0.5 ? 1 : 0);
    if (noise(rng) == 0) label = (label + 1) % n_classes;
    s.y[static_cast<std::size_t>(i)] = label % n_classes;
  }
  return s;
}

// decision_function (blocks of rows) equals decision() row by row, and the model file's Model
// predicts the same: bit for bit, or to 1e-12 where Model sums in another order (a uniform
// average, read as one expansion A + C / N then the retired SVs; the SVMs' y alpha).
template <class L>
void check_blocks_equal_rows(L& learner, const RowMatrix& T, const char* what, bool model_bitwise) {
  const RowMatrix blocks = learner.decision_function(T);
  RowMatrix rows(T.rows(), learner.n_outputs());
  for (Index i = 0; i < T.rows(); ++i) learner.decision(T.row(i).data(), rows.row(i).data());
  const bool ok = same_bits(blocks, rows);
  if (!ok) std::printf("  %s: blocks differ from rows by %g\n", what, (blocks - rows).cwiseAbs().maxCoeff());
  CHECK(ok);
  FieldMap fm;
  learner.save(fm);
  const Model model(FieldMap::from_bytes(fm.to_bytes()));
  const RowMatrix by_model = model.decision_function(T);
  const bool model_ok =
      model_bitwise ? same_bits(by_model, blocks) : (by_model - blocks).cwiseAbs().maxCoeff() <= 1e-12;
  if (!model_ok) std::printf("  %s: Model differs\n", what);
  CHECK(model_ok);
}

}  // namespace

TEST_CASE("dot_rows: a value depends on its two rows only, and is symmetric") {
  for (Index d : {32, 33, 35, 39, 64, 101, 784}) {
    const RowMatrix X = gaussian(10, d, 1 + static_cast<std::uint64_t>(d)), S = gaussian(13, d, 2);
    RowMatrix block(10, 13), single(1, 13), back(1, 10);
    detail::dot_rows(X.data(), d, 10, S.data(), d, 13, d, block.data(), 13);
    for (Index r = 0; r < 10; ++r) {
      detail::dot_rows(X.row(r).data(), d, 1, S.data(), d, 13, d, single.data(), 13);
      CHECK(same_bits(single, block.row(r)));
    }
    // Every tile shape: first j SVs only, rows in another order.
    for (Index n : {1, 3, 4, 5, 9}) {
      RowMatrix part(10, n);
      detail::dot_rows(X.data(), d, 10, S.data(), d, n, d, part.data(), n);
      CHECK(same_bits(part, block.leftCols(n)));
    }
    for (Index j = 0; j < 13; ++j) {
      detail::dot_rows(S.row(j).data(), d, 1, X.data(), d, 10, d, back.data(), 10);
      CHECK(same_bits(back, block.col(j).transpose()));
    }
    // Oracle: long double sums; rounding bound ~ d ulp of sum |x_k s_k|.
    for (Index r = 0; r < 10; ++r)
      for (Index j = 0; j < 13; ++j) {
        long double ref = 0, mag = 0;
        for (Index k = 0; k < d; ++k) {
          ref += static_cast<long double>(X(r, k)) * S(j, k);
          mag += std::abs(static_cast<long double>(X(r, k)) * S(j, k));
        }
        CHECK(std::abs(static_cast<long double>(block(r, j)) - ref) <= 1e-15L * static_cast<long double>(d) * mag);
      }
  }
}

TEST_CASE("Kernel::dots_rows equals Kernel::dots row by row in every dimension") {
  for (Index d : {1, 2, 3, 4, 5, 8, 31, 32, 40}) {
    const RowMatrix X = gaussian(7, d, 3), S = gaussian(11, d, 4);
    RowMatrix D(7, 11);
    Kernel::dots_rows(S, 9, X, D.leftCols(9));
    Vector out(11);
    for (Index r = 0; r < 7; ++r) {
      Kernel::dots(S, 9, X.row(r).transpose(), out);
      CHECK(same_bits(D.row(r).leftCols(9), out.head(9).transpose()));
    }
  }
}

TEST_CASE("learners: blocks of rows give the per-row decision values, and Model agrees") {
  const Index d = 40;
  for (int c : {2, 3}) {
    const Highd s = stream(700, d, c, 11);
    const RowMatrix T = gaussian(203, d, 12);  // 203: blocks end mid-tile
    const Kernel k(KernelType::RBF, 1.0 / static_cast<double>(d));
    // Trains `learner` on the first `rows` examples and checks it. model_bitwise: false where
    // Model sums in another order (uniform averages; the SVMs' y alpha).
    const auto check = [&](auto learner, const char* what, bool model_bitwise, Index rows = 700) {
      learner.partial_fit(s.X.topRows(rows), s.y.data());
      check_blocks_equal_rows(learner, T, what, model_bitwise);
    };
    BSGDParams bsgd;
    bsgd.kernel = k;
    bsgd.lam = 1e-3;
    bsgd.budget = 50;
    bsgd.maintenance = Maintenance::Merge;
    check(KernelPegasos(d, c, bsgd), "bsgd merge", true);
    bsgd.average_start = 100;
    check(KernelPegasos(d, c, bsgd), "bsgd averaged", true);

    PAParams pa;
    pa.kernel = k;
    pa.budget = 60;
    pa.variant = BPAVariant::Random;
    pa.seed = 3;
    check(PassiveAggressive(d, c, pa), "pa+rand", true);
    pa.averaged = true;  // the average keeps the removed SVs: a second store to score
    check(PassiveAggressive(d, c, pa), "pa averaged", false);

    SPAParams spa;
    spa.kernel = k;
    spa.averaged = true;
    spa.seed = 4;
    check(SparsePA(d, c, spa), "spa-avg", false);

    BOGDParams bogd;
    bogd.kernel = k;
    bogd.budget = 40;
    bogd.lam = 1e-3;
    bogd.averaged = true;
    bogd.seed = 5;
    check(BOGD(d, c, bogd), "bogd averaged", false);

    IDSVMParams svm;
    svm.kernel = k;
    check(IncrementalSVC(d, c, svm), "incremental svc", false, 300);
    TVMParams tvm;
    tvm.kernel = k;
    tvm.budget = 25;
    check(TwinVectorMachine(d, c, tvm), "tvm", false);

    PerceptronParams perc;
    perc.kernel = k;
    perc.budget = 0;  // unbudgeted: 100s of SVs, several row blocks
    check(KernelPerceptron(d, c, perc), "perceptron", true);
  }
}

TEST_CASE("a stop request ends block scoring between two blocks, the rows before it scored") {
  const Index d = 40;
  const Highd s = stream(300, d, 2, 21);
  PerceptronParams p;
  p.kernel = Kernel(KernelType::RBF, 0.025);
  KernelPerceptron perc(d, 2, p);
  perc.partial_fit(s.X, s.y.data());
  const RowMatrix T = gaussian(500, d, 22);
  const RowMatrix full = perc.decision_function(T);
  struct Second {  // says stop on its second call: after the first block
    int calls = 0;
    static bool call(void* self) { return ++static_cast<Second*>(self)->calls == 2; }
  } second;
  StopPoll stop(&Second::call, &second, StopPoll::Clock::duration::zero());
  RowMatrix out = RowMatrix::Zero(T.rows(), 1);
  Index done = -1;
  try {
    perc.decision_function(T, out, &stop);
  } catch (const Interrupted& e) {
    done = e.done();
  }
  CHECK(done > 0 && done < T.rows());
  if (done > 0) CHECK(same_bits(out.topRows(done), full.topRows(done)));
}

int main() { return bk_test::run_all(); }
