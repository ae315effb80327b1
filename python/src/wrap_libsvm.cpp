// Binding of the LIBSVM reader (libsvm.hpp) behind budgetkernel.datasets.iter_svmlight.
// Python opens the file (gzip, pipes), feeds byte blocks and turns a rejected line into its
// message; parsing and the dense scatter run here with the GIL released.
#include "bindings.hpp"

#include <budgetkernel/libsvm.hpp>

namespace {

// What scan() and read() return; budgetkernel/io.py has the same constants.
enum : int { kNeedInput = 0, kEnd = 1, kRejected = 2, kFull = 3 };

const char* status_name(bk::LibsvmStatus s) {
  switch (s) {
    case bk::LibsvmStatus::ok: return "ok";
    case bk::LibsvmStatus::missing_label: return "missing_label";
    case bk::LibsvmStatus::bad_label: return "bad_label";
    case bk::LibsvmStatus::nonfinite_label: return "nonfinite_label";
    case bk::LibsvmStatus::missing_colon: return "missing_colon";
    case bk::LibsvmStatus::bad_qid: return "bad_qid";
    case bk::LibsvmStatus::bad_index: return "bad_index";
    case bk::LibsvmStatus::negative_index: return "negative_index";
    case bk::LibsvmStatus::index_too_large: return "index_too_large";
    case bk::LibsvmStatus::bad_value: return "bad_value";
    case bk::LibsvmStatus::nonfinite_value: return "nonfinite_value";
    case bk::LibsvmStatus::duplicate_index: return "duplicate_index";
    case bk::LibsvmStatus::invalid_utf8: return "invalid_utf8";
    case bk::LibsvmStatus::non_ascii: return "non_ascii";
    case bk::LibsvmStatus::non_integer_label: return "non_integer_label";
    case bk::LibsvmStatus::label_out_of_range: return "label_out_of_range";
    case bk::LibsvmStatus::zero_index_one_based: return "zero_index_one_based";
    case bk::LibsvmStatus::index_beyond_n_features: return "index_beyond_n_features";
    case bk::LibsvmStatus::value_out_of_range: return "value_out_of_range";
  }
  return "unknown";
}

/// One pass over one file: a scan (validate and summarise) or a read (rows of a fixed layout
/// in chunks). Used by one generator at a time; a second thread entering while the GIL is
/// released for parsing gets a RuntimeError instead of a data race.
class LibsvmPass {
 public:
  LibsvmPass(bool reading, std::int64_t n_features, std::int64_t offset, bool integer_labels,
             std::int64_t label_int_min, std::int64_t label_int_max, double label_max, double value_max,
             bool one_based)
      : m_reading(reading), m_one_based(one_based) {
    if (reading && n_features < 0) throw std::invalid_argument("n_features must be non-negative");
    if (offset != 0 && offset != 1) throw std::invalid_argument("offset must be 0 or 1");
    m_layout.n_features = n_features;
    m_layout.offset = offset;
    m_layout.integer_labels = integer_labels;
    m_layout.label_int_min = label_int_min;
    m_layout.label_int_max = label_int_max;
    m_layout.label_max = label_max;
    m_layout.value_max = value_max;
  }

  void feed(const py::bytes& data) {
    Busy busy(*this);
    char* p = nullptr;
    Py_ssize_t n = 0;
    if (PyBytes_AsStringAndSize(data.ptr(), &p, &n) != 0) throw py::error_already_set();
    m_parser.feed(p, static_cast<std::size_t>(n));
  }

  void finish() {
    Busy busy(*this);
    m_parser.finish();
  }

  /// Validates and summarises lines until the parser needs input, ends or rejects a line.
  int scan() {
    Busy busy(*this);
    if (m_reading) throw std::logic_error("scan() on a reading pass");
    py::gil_scoped_release nogil;
    for (;;) {
      const bk::LibsvmNext r = m_parser.next(m_line);
      if (r == bk::LibsvmNext::need_input) return kNeedInput;
      if (r == bk::LibsvmNext::end) return kEnd;
      if (r == bk::LibsvmNext::rejected) {
        m_status = m_parser.status();
        return kRejected;
      }
      if (m_one_based && std::find(m_line.indices.begin(), m_line.indices.end(), 0) != m_line.indices.end()) {
        m_status = bk::LibsvmStatus::zero_index_one_based;
        return kRejected;
      }
      m_summary.add(m_line);
    }
  }

  /// Parses rows into the chunk until it holds max_rows (kFull) or the parser needs input,
  /// ends or rejects a line.
  int read(std::int64_t max_rows) {
    Busy busy(*this);
    if (!m_reading) throw std::logic_error("read() on a scanning pass");
    py::gil_scoped_release nogil;
    for (;;) {
      if (m_rows.size() >= max_rows) return kFull;
      const bk::LibsvmNext r = m_parser.next(m_line);
      if (r == bk::LibsvmNext::need_input) return kNeedInput;
      if (r == bk::LibsvmNext::end) return kEnd;
      m_status = r == bk::LibsvmNext::rejected ? m_parser.status() : bk::check_libsvm_row(m_line, m_layout);
      if (m_status != bk::LibsvmStatus::ok) return kRejected;
      m_rows.append(m_line, m_layout.offset, m_parser.line_number());
    }
  }

  /// A rejected line that Python's own rules accept (non-ASCII digits or spaces): its row,
  /// already checked against the layout by the caller.
  void accept_row(double label, std::int64_t label_int, bool label_is_int, const std::vector<std::int64_t>& indices,
                  const std::vector<double>& values) {
    Busy busy(*this);
    if (indices.size() != values.size()) throw std::invalid_argument("indices and values differ in length");
    bk::LibsvmLine line;
    line.blank = false;
    line.label = label;
    line.label_int = label_int;
    line.label_is_int = label_is_int;
    line.indices = indices;
    line.values = values;
    if (!m_reading) {
      m_summary.add(line);
      return;
    }
    // Re-checked so that no caller can make to_dense() write outside X.
    if (bk::check_libsvm_row(line, m_layout) != bk::LibsvmStatus::ok)
      throw std::invalid_argument("accept_row: the row does not fit the layout");
    m_rows.append(line, m_layout.offset, m_parser.line_number());
  }

  /// Writes the chunk's rows into the given arrays (any may be None) and empties the chunk.
  void take(py::object X, py::object y_float, py::object y_int, py::object y_is_int, py::object lines) {
    Busy busy(*this);
    const std::int64_t n = m_rows.size();
    auto vector_of = [n](const py::object& o, const py::dtype& dt, const char* name) -> void* {
      if (o.is_none()) return nullptr;
      if (!py::isinstance<py::array>(o)) throw std::invalid_argument(std::string(name) + " must be an array");
      py::array a = py::reinterpret_borrow<py::array>(o);
      if (!a.dtype().is(dt) || a.ndim() != 1 || a.shape(0) != n ||
          !(a.flags() & py::array::c_style) || !a.writeable())
        throw std::invalid_argument(std::string(name) + " must be a writeable contiguous 1-D array of the chunk's length");
      return a.mutable_data();
    };
    double* yf = static_cast<double*>(vector_of(y_float, py::dtype::of<double>(), "y_float"));
    std::int64_t* yi = static_cast<std::int64_t*>(vector_of(y_int, py::dtype::of<std::int64_t>(), "y_int"));
    std::uint8_t* yb = static_cast<std::uint8_t*>(vector_of(y_is_int, py::dtype::of<std::uint8_t>(), "y_is_int"));
    std::int64_t* ln = static_cast<std::int64_t*>(vector_of(lines, py::dtype::of<std::int64_t>(), "lines"));
    float* x32 = nullptr;
    double* x64 = nullptr;
    if (!X.is_none()) {
      if (!py::isinstance<py::array>(X)) throw std::invalid_argument("X must be an array");
      py::array a = py::reinterpret_borrow<py::array>(X);
      const bool f32 = a.dtype().is(py::dtype::of<float>()), f64 = a.dtype().is(py::dtype::of<double>());
      if (!(f32 || f64) || a.ndim() != 2 || a.shape(0) != n || a.shape(1) != m_layout.n_features ||
          !(a.flags() & py::array::c_style) || !a.writeable())
        throw std::invalid_argument("X must be a writeable C-contiguous float32/float64 array of shape (rows, n_features)");
      if (f32)
        x32 = static_cast<float*>(a.mutable_data());
      else
        x64 = static_cast<double*>(a.mutable_data());
    }
    {
      py::gil_scoped_release nogil;
      if (x32) m_rows.to_dense(x32, m_layout.n_features);
      if (x64) m_rows.to_dense(x64, m_layout.n_features);
      const auto& labels = m_rows.labels();
      const auto& ints = m_rows.label_ints();
      const auto& is_int = m_rows.label_is_int();
      const auto& where = m_rows.line_numbers();
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (yf) yf[i] = labels[k];
        if (yi) yi[i] = ints[k];
        if (yb) yb[i] = is_int[k];
        if (ln) ln[i] = where[k];
      }
      m_rows.clear();
    }
  }

  std::int64_t rows() const { return m_rows.size(); }
  std::string status() const { return status_name(m_status); }
  std::int64_t line_number() const { return m_parser.line_number(); }
  py::bytes line_text() const {
    const std::string_view t = m_parser.line_text();
    return py::bytes(t.data(), t.size());
  }
  py::dict summary() const {
    py::dict d;
    d["rows"] = m_summary.rows;
    d["min_index"] = m_summary.min_index;
    d["max_index"] = m_summary.max_index;
    d["all_integer_labels"] = m_summary.all_integer_labels;
    return d;
  }

 private:
  struct Busy {
    explicit Busy(LibsvmPass& p) : pass(p) {
      if (pass.m_busy) throw std::runtime_error("a LIBSVM reader was used from two threads at once");
      pass.m_busy = true;
    }
    ~Busy() { pass.m_busy = false; }
    LibsvmPass& pass;
  };

  bool m_reading;
  bool m_one_based;
  bool m_busy = false;
  bk::LibsvmLayout m_layout;
  bk::LibsvmParser m_parser;
  bk::LibsvmLine m_line;
  bk::LibsvmRows m_rows;
  bk::LibsvmSummary m_summary;
  bk::LibsvmStatus m_status = bk::LibsvmStatus::ok;
};

}  // namespace

void wrap_libsvm(py::module_& m) {
  m.attr("LIBSVM_NEED_INPUT") = static_cast<int>(kNeedInput);
  m.attr("LIBSVM_END") = static_cast<int>(kEnd);
  m.attr("LIBSVM_REJECTED") = static_cast<int>(kRejected);
  m.attr("LIBSVM_FULL") = static_cast<int>(kFull);
  py::class_<LibsvmPass>(m, "LibsvmPass", py::module_local(),
                         "One pass of the LIBSVM reader over a file (private: use budgetkernel.datasets).")
      .def(py::init<bool, std::int64_t, std::int64_t, bool, std::int64_t, std::int64_t, double, double, bool>(),
           py::arg("reading"), py::arg("n_features") = -1, py::arg("offset") = 1, py::arg("integer_labels") = false,
           py::arg("label_int_min") = (std::numeric_limits<std::int64_t>::min)(),
           py::arg("label_int_max") = (std::numeric_limits<std::int64_t>::max)(),
           py::arg("label_max") = std::numeric_limits<double>::infinity(),
           py::arg("value_max") = std::numeric_limits<double>::infinity(), py::arg("one_based") = false)
      .def("feed", &LibsvmPass::feed, py::arg("data"), "Appends a block of bytes.")
      .def("finish", &LibsvmPass::finish, "No more input.")
      .def("scan", &LibsvmPass::scan, "Validates lines; returns LIBSVM_NEED_INPUT, LIBSVM_END or LIBSVM_REJECTED.")
      .def("read", &LibsvmPass::read, py::arg("max_rows"),
           "Parses rows into the chunk; returns LIBSVM_FULL, LIBSVM_NEED_INPUT, LIBSVM_END or LIBSVM_REJECTED.")
      .def("accept_row", &LibsvmPass::accept_row, py::arg("label"), py::arg("label_int"), py::arg("label_is_int"),
           py::arg("indices"), py::arg("values"), "Adds the row of a rejected line that Python's rules accept.")
      .def("take", &LibsvmPass::take, py::arg("X"), py::arg("y_float"), py::arg("y_int"), py::arg("y_is_int"),
           py::arg("lines"), "Writes the chunk into the arrays (each may be None) and empties it.")
      .def_property_readonly("rows", &LibsvmPass::rows, "rows in the current chunk")
      .def_property_readonly("status", &LibsvmPass::status, "why the last line was rejected")
      .def_property_readonly("line_number", &LibsvmPass::line_number, "one-based number of the last line")
      .def_property_readonly("line_text", &LibsvmPass::line_text, "bytes of the last line")
      .def_property_readonly("summary", &LibsvmPass::summary, "what the scan found");
}
