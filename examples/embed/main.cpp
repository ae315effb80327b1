// Loads a model file saved by Python (BudgetedSGDClassifier.save) and checks that C++
// predicts the same decision values as Python did.
//
//   embed MODEL_FILE REFERENCE_FILE   REFERENCE_FILE: one example per line, its d feature values
//                                     then the model's n_outputs expected decision values
//   embed --self-check                no files: prints the library version, exits 0
//
// Exit status 0 iff max |C++ - Python| <= 1e-12.
// Only the headers this program uses (not the umbrella budgetkernel.hpp): reading a model and
// predicting needs io.hpp, and the compiler then instantiates none of the learners' code
// (docs/cpp/embedding.md, "Compile time").
#include <budgetkernel/io.hpp>       // Model, load_model
#include <budgetkernel/kernel.hpp>   // Kernel (the self-check)
#include <budgetkernel/version.hpp>  // version_string

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr double kTolerance = 1e-12;

int self_check() {
  // Exercise the headers and Eigen once: k(x, x) = 1 for the Gaussian kernel.
  const budgetkernel::Kernel k(budgetkernel::KernelType::RBF, 0.5);
  budgetkernel::Vector x(3);
  x << 1.0, -2.0, 0.5;
  if (std::fabs(k.value(x, x) - 1.0) > kTolerance) {
    std::fprintf(stderr, "self-check failed: k(x, x) = %.17g\n", k.value(x, x));
    return 1;
  }
  std::printf("budgetkernel %s self-check OK\n", budgetkernel::version_string);
  return 0;
}

/// Reads whitespace-separated rows of `width` numbers (blank lines and '#' comments skipped).
std::vector<std::vector<double>> read_rows(const std::string& path, std::size_t width) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open reference file '" + path + "'");
  std::vector<std::vector<double>> rows;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream tokens(line);
    std::vector<double> row;
    std::string tok;
    while (tokens >> tok) {
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0' || errno == ERANGE)
        throw std::runtime_error(path + ":" + std::to_string(line_no) + ": not a number: '" + tok + "'");
      row.push_back(v);
    }
    if (row.size() != width)
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": expected " + std::to_string(width) +
                               " values (features then decision values), found " + std::to_string(row.size()));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw std::runtime_error("reference file '" + path + "' has no rows");
  return rows;
}

int compare(const std::string& model_path, const std::string& reference_path) {
  const budgetkernel::Model m = budgetkernel::load_model(model_path);
  const auto d = static_cast<std::size_t>(m.n_features());
  const auto c = static_cast<std::size_t>(m.n_outputs());
  const auto rows = read_rows(reference_path, d + c);

  const auto n = static_cast<budgetkernel::Index>(rows.size());
  budgetkernel::RowMatrix X(n, m.n_features());
  budgetkernel::RowMatrix expected(n, m.n_outputs());
  for (budgetkernel::Index i = 0; i < n; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    for (std::size_t j = 0; j < d; ++j) X(i, static_cast<budgetkernel::Index>(j)) = r[j];
    for (std::size_t j = 0; j < c; ++j) expected(i, static_cast<budgetkernel::Index>(j)) = r[d + j];
  }

  const budgetkernel::RowMatrix D = m.decision_function(X);
  const double max_diff = (D - expected).cwiseAbs().maxCoeff();
  const bool ok = std::isfinite(max_diff) && max_diff <= kTolerance;
  std::printf("budgetkernel %s: %lld examples, %zu features, %zu outputs\n", budgetkernel::version_string,
              static_cast<long long>(n), d, c);
  std::printf("max |C++ - reference| = %.3g (tolerance %.0e): %s\n", max_diff, kTolerance,
              ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::string(argv[1]) == "--self-check") return self_check();
    if (argc != 3) {
      std::fprintf(stderr, "usage: %s MODEL_FILE REFERENCE_FILE\n       %s --self-check\n", argv[0], argv[0]);
      return 2;
    }
    return compare(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
