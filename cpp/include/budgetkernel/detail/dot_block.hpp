#pragma once
/// \file detail/dot_block.hpp
/// Dot products of query rows with SV rows, out(r, j) = X_r . S_j, for inputs of
/// kDotBlockMinDim or more features: one row at a time while learning, blocks of rows when
/// scoring a chunk.
///
/// Why a kernel of our own rather than Eigen's gemv/gemm:
///  * Scoring a chunk row by row streams the whole SV block from memory once per row; with
///    B = 1000 SVs of d = 784 (6.3 MB, beyond L2) that is bandwidth-bound, whatever the vector
///    width. A register tile of 3 rows x 4 SVs reuses every load 3-4 times, and SVs are taken
///    in L2-sized panels.
///  * A gemm (Eigen's, or a BLAS) sums each dot product in an order that depends on the block
///    sizes, hence on how many rows are scored together. Here every dot product is summed the
///    same way whatever the tile: one packet accumulator along d (lane l takes features
///    l, l + P, l + 2P, ...), a fixed horizontal sum, then the d mod P remaining features by a
///    scalar multiply-add chain. So a row scored alone, in a block, or as the query of a
///    GramCache row gives the same bits, and X_r . S_j == S_j . X_r (each product and each
///    addition commutes), which GramCache's symmetric canonical values rely on. The scalar
///    tail uses std::fma exactly when the packets fuse, so no compiler contraction choice can
///    make two call sites differ.
///
/// Below kDotBlockMinDim features the tiles do not pay (the scalar tail dominates), so
/// Kernel::dots keeps its per-row code there. The timings behind these choices:
/// docs/derivations.md, "Measurements behind design choices".

#include "../common.hpp"

#include <algorithm>
#include <cmath>

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
// Without full unrolling of the tile loops GCC -O2 keeps the accumulators on the stack
// (much slower tiles).
#define BUDGETKERNEL_UNROLL _Pragma("GCC unroll 8")
#else
#define BUDGETKERNEL_UNROLL
#endif

namespace budgetkernel {
namespace detail {

/// Inputs with at least this many features use dot_rows (see the file comment).
inline constexpr Index kDotBlockMinDim = 32;

namespace dot_block {

using Packet = Eigen::internal::packet_traits<double>::type;
inline constexpr Index kLanes = Eigen::internal::packet_traits<double>::Vectorizable
                                    ? Eigen::internal::packet_traits<double>::size
                                    : 1;

/// a * b + c, fused wherever the hardware can fuse (explicitly, so inlining cannot change it).
inline double madd(double a, double b, double c) {
#if defined(EIGEN_VECTORIZE_FMA) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// The R x C tile out(r, c) = X_r . S_c (rows ldx / lds / ldo apart).
template <int R, int C>
inline void tile(const double* X, Index ldx, const double* S, Index lds, Index d, double* out, Index ldo) {
  using Eigen::internal::pmadd;
  using Eigen::internal::ploadu;
  Packet acc[R][C];
  BUDGETKERNEL_UNROLL for (int r = 0; r < R; ++r)
    BUDGETKERNEL_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = Eigen::internal::pset1<Packet>(0.0);
  const Index full = d - d % kLanes;
  for (Index k = 0; k < full; k += kLanes) {
    Packet xp[R];
    BUDGETKERNEL_UNROLL for (int r = 0; r < R; ++r) xp[r] = ploadu<Packet>(X + r * ldx + k);
    BUDGETKERNEL_UNROLL for (int c = 0; c < C; ++c) {
      const Packet sp = ploadu<Packet>(S + c * lds + k);
      BUDGETKERNEL_UNROLL for (int r = 0; r < R; ++r) acc[r][c] = pmadd(xp[r], sp, acc[r][c]);
    }
  }
  BUDGETKERNEL_UNROLL for (int r = 0; r < R; ++r)
    BUDGETKERNEL_UNROLL for (int c = 0; c < C; ++c) {
      const double* xt = X + r * ldx + full;
      const double* st = S + c * lds + full;
      double tail = 0.0;
      for (Index t = 0; t < d - full; ++t) tail = madd(xt[t], st[t], tail);
      out[r * ldo + c] = Eigen::internal::predux(acc[r][c]) + tail;
    }
}

/// Tiles of kR rows x kC SVs; single rows take 1 x kC tiles (see the file comment).
inline constexpr int kR = 3, kC = 4;
/// SVs per panel: a panel of S stays in L2 (~192 KiB) while every row block passes over it.
inline constexpr Index kPanelBytes = Index{192} * 1024;

}  // namespace dot_block

/// out[r * ldo + j] = X_r . S_j for r < m, j < n (rows of X ldx apart, of S lds apart, d
/// features). Each value depends on its two rows only (see the file comment). O(m n d).
inline void dot_rows(const double* X, Index ldx, Index m, const double* S, Index lds, Index n, Index d, double* out,
                     Index ldo) {
  using namespace dot_block;
  const Index panel = (std::max)(Index{kC}, kPanelBytes / (Index{8} * (std::max)(d, Index{1})) / kC * kC);
  for (Index j0 = 0; j0 < n; j0 += panel) {
    const Index j1 = (std::min)(n, j0 + panel);
    Index i = 0;
    for (; i + kR <= m; i += kR) {
      Index j = j0;
      for (; j + kC <= j1; j += kC) tile<kR, kC>(X + i * ldx, ldx, S + j * lds, lds, d, out + i * ldo + j, ldo);
      for (; j < j1; ++j) tile<kR, 1>(X + i * ldx, ldx, S + j * lds, lds, d, out + i * ldo + j, ldo);
    }
    for (; i < m; ++i) {
      Index j = j0;
      for (; j + kC <= j1; j += kC) tile<1, kC>(X + i * ldx, ldx, S + j * lds, lds, d, out + i * ldo + j, ldo);
      for (; j < j1; ++j) tile<1, 1>(X + i * ldx, ldx, S + j * lds, lds, d, out + i * ldo + j, ldo);
    }
  }
}

}  // namespace detail
}  // namespace budgetkernel
