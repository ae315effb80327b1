// The LIBSVM reader (libsvm.hpp): line grammar and exact number conversion, line splitting
// over arbitrary block boundaries (LF, CRLF, lone CR, a BOM), the scan + read passes over a
// std::istream, and no crash or unbounded growth on hostile bytes.
#include <budgetkernel/libsvm.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace budgetkernel;

namespace {

LibsvmStatus parse(const std::string& s, LibsvmLine& out) {
  std::vector<std::int64_t> scratch;
  return parse_libsvm_line(s.data(), s.data() + s.size(), out, scratch);
}

LibsvmStatus status_of(const std::string& s) {
  LibsvmLine line;
  return parse(s, line);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every row of `text` fed in blocks of `block` bytes: (line number, label, indices, values),
// or the first rejection as (line number, status) in `rejected`.
struct Parsed {
  std::vector<std::int64_t> lines;
  std::vector<LibsvmLine> rows;
  std::int64_t rejected_line = 0;
  LibsvmStatus rejected = LibsvmStatus::ok;
};

Parsed parse_in_blocks(const std::string& text, std::size_t block) {
  Parsed out;
  LibsvmParser parser;
  LibsvmLine line;
  std::size_t fed = 0;
  for (;;) {
    const LibsvmNext r = parser.next(line);
    if (r == LibsvmNext::end) return out;
    if (r == LibsvmNext::need_input) {
      if (fed == text.size()) {
        parser.finish();
      } else {
        const std::size_t n = (std::min)(block, text.size() - fed);
        parser.feed(text.data() + fed, n);
        fed += n;
      }
    } else if (r == LibsvmNext::rejected) {
      out.rejected_line = parser.line_number();
      out.rejected = parser.status();
      return out;
    } else {
      out.lines.push_back(parser.line_number());
      out.rows.push_back(line);
    }
  }
}

}  // namespace

TEST_CASE("a line: label, features, qid, comment") {
  LibsvmLine line;
  CHECK(parse("+1 qid:3 3:1.5 1:2 # a comment", line) == LibsvmStatus::ok);
  CHECK(!line.blank && line.label_is_int && line.label_int == 1 && line.label == 1.0);
  CHECK((line.indices == std::vector<std::int64_t>{3, 1}));
  CHECK((line.values == std::vector<double>{1.5, 2.0}));
  CHECK(parse("-2.5e-3\t7:-0\x0b 8:.5\x1c", line) == LibsvmStatus::ok);
  CHECK(!line.label_is_int && line.label == -2.5e-3);
  CHECK(same_bits(line.values[0], -0.0) && line.values[1] == 0.5);
  CHECK(parse("  # only a comment", line) == LibsvmStatus::ok && line.blank);
  CHECK(parse("", line) == LibsvmStatus::ok && line.blank);
  CHECK(parse("3#glued comment", line) == LibsvmStatus::ok && line.label_int == 3 && line.indices.empty());
  // an integer label beyond int64 is a float label
  CHECK(parse("99999999999999999999 1:1", line) == LibsvmStatus::ok && !line.label_is_int && line.label == 1e20);
  CHECK(parse("-9223372036854775808", line) == LibsvmStatus::ok && line.label_is_int &&
        line.label_int == (std::numeric_limits<std::int64_t>::min)());
  // leading zeros and a sign are an ordinary index
  CHECK(parse("1 +0000000000000000000000003:2.5 -0:1", line) == LibsvmStatus::ok);
  CHECK((line.indices == std::vector<std::int64_t>{3, 0}));
  CHECK(parse("1 9223372036854775807:1", line) == LibsvmStatus::ok);
}

TEST_CASE("rejected lines say why") {
  CHECK(status_of("1:2 3:4") == LibsvmStatus::missing_label);
  CHECK(status_of("foo 1:2") == LibsvmStatus::bad_label);
  CHECK(status_of("1_0 1:2") == LibsvmStatus::bad_label);
  CHECK(status_of("nan 1:2") == LibsvmStatus::nonfinite_label);
  CHECK(status_of("-Infinity") == LibsvmStatus::nonfinite_label);
  CHECK(status_of("1e400") == LibsvmStatus::nonfinite_label);
  CHECK(status_of(std::string(400, '9')) == LibsvmStatus::nonfinite_label);
  CHECK(status_of("1 3 4:1") == LibsvmStatus::missing_colon);
  CHECK(status_of("1 qid:x 1:2") == LibsvmStatus::bad_qid);
  CHECK(status_of("1 x:1") == LibsvmStatus::bad_index);
  CHECK(status_of("1 1_0:1") == LibsvmStatus::bad_index);
  CHECK(status_of("1 -2:1") == LibsvmStatus::negative_index);
  CHECK(status_of("1 -" + std::string(30, '9') + ":1") == LibsvmStatus::negative_index);
  CHECK(status_of("1 9223372036854775808:1") == LibsvmStatus::index_too_large);
  CHECK(status_of("1 " + std::string(5000, '1') + ":1") == LibsvmStatus::index_too_large);
  CHECK(status_of("1 1:abc") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:0x10") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:1e") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:.") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:1:2") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:nan(1)") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:") == LibsvmStatus::bad_value);
  CHECK(status_of("1 1:-inf") == LibsvmStatus::nonfinite_value);
  CHECK(status_of("1 1:1e309") == LibsvmStatus::nonfinite_value);
  CHECK(status_of("1 2:1 5:1 2:3") == LibsvmStatus::duplicate_index);
  CHECK(status_of("1 1:2\xc2\xa0") == LibsvmStatus::non_ascii);     // NBSP: a space to Python
  CHECK(status_of("1 1:2 # caf\xc3\xa9") == LibsvmStatus::ok);        // UTF-8 in a comment
  CHECK(status_of("1 1:2 # caf\xe9") == LibsvmStatus::invalid_utf8);  // Latin-1 in a comment
  CHECK(status_of("1 1:2 # \xed\xa0\x80") == LibsvmStatus::invalid_utf8);  // a surrogate
  CHECK(status_of(std::string("1 1:2\0", 6)) == LibsvmStatus::bad_value);
}

TEST_CASE("numbers are the nearest double, as Python's float() gives") {
  LibsvmLine line;
  struct Case {
    const char* text;
    double value;
  };
  const Case cases[] = {
      {"0.1", 0.1},
      {"1e-400", 0.0},
      {"4.9e-324", 4.9406564584124654e-324},
      {"2.4703282292062328e-324", 4.9406564584124654e-324},  // just above half the smallest subnormal
      {"2.4703282292062327e-324", 0.0},
      {"1.7976931348623157e308", 1.7976931348623157e308},
      {"2.2250738585072011e-308", 2.2250738585072011e-308},
      {"9007199254740993", 9007199254740992.0},  // ties to even
      {"1.", 1.0},
      {".5", 0.5},
      {"+.5E+1", 5.0},
      {"00000000000000000000000000000000001.5", 1.5},
      {"1e0000000000000000000000000000005", 1e5},
      {"0e999999999999999999999999", 0.0},
  };
  for (const Case& c : cases) {
    CHECK(parse(std::string("1 1:") + c.text, line) == LibsvmStatus::ok);
    CHECK(same_bits(line.values[0], c.value));
  }
  CHECK(parse("1 1:-1e-400", line) == LibsvmStatus::ok && same_bits(line.values[0], -0.0));
  CHECK(status_of("1 1:1.8e308") == LibsvmStatus::nonfinite_value);
  CHECK(status_of("1 1:1e99999999999999999999999") == LibsvmStatus::nonfinite_value);
  // 1 followed by 800 zeros, as a fraction of 10^800: exactly 1 (needs every digit)
  CHECK(parse("1 1:1" + std::string(800, '0') + "e-800", line) == LibsvmStatus::ok && line.values[0] == 1.0);
  CHECK(parse("1 1:0." + std::string(400, '0') + "1e401", line) == LibsvmStatus::ok && line.values[0] == 1.0);
}

TEST_CASE("lines and their numbers do not depend on block boundaries") {
  const std::string text =
      "\xef\xbb\xbf"
      "1 1:2\r\n"
      "# comment\r"
      "\r\n"
      "-1 2:3\r"
      "2 3:4\n"
      "\n"
      "3 1:5";  // no final terminator
  const std::vector<std::int64_t> want_lines{1, 4, 5, 7};
  for (std::size_t block = 1; block <= text.size(); ++block) {
    const Parsed p = parse_in_blocks(text, block);
    CHECK(p.rejected == LibsvmStatus::ok);
    CHECK(p.lines == want_lines);
    CHECK(p.rows.size() == 4 && p.rows[0].label_int == 1 && p.rows[3].values[0] == 5.0);
  }
  // A BOM only at the very start; a truncated one is bad UTF-8 in the label.
  CHECK(parse_in_blocks("1 1:2\n\xef\xbb\xbf-1 1:2\n", 1).rejected_line == 2);
  CHECK(parse_in_blocks("\xef\xbb", 1).rejected == LibsvmStatus::non_ascii);
  // A bad line far into the text names its own line, whatever the block size.
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "1 1:2\n";
  big += "-1 2:3 # caf\xe9\n1 1:2\n";
  for (std::size_t block : {std::size_t{1} << 16, std::size_t{7}, std::size_t{4096}}) {
    const Parsed p = parse_in_blocks(big, block);
    CHECK(p.rejected == LibsvmStatus::invalid_utf8 && p.rejected_line == 5001 && p.rows.size() == 5000);
  }
}

TEST_CASE("a rejected line is consumed: the next call goes on") {
  LibsvmParser parser;
  LibsvmLine line;
  const std::string text = "1 1:2\nbad\n-1 2:3\n";
  parser.feed(text.data(), text.size());
  parser.finish();
  CHECK(parser.next(line) == LibsvmNext::row);
  CHECK(parser.next(line) == LibsvmNext::rejected && parser.line_number() == 2 &&
        parser.status() == LibsvmStatus::bad_label && parser.line_text() == "bad");
  CHECK(parser.next(line) == LibsvmNext::row && parser.line_number() == 3 && line.label_int == -1);
  CHECK(parser.next(line) == LibsvmNext::end);
}

TEST_CASE("scan and read a stream, in chunks, as the Python reader's defaults do") {
  const std::string text = "# header\n+1 qid:3 3:1.5 1:2\n\n-1\n2 2:-4e-3\n";
  std::istringstream in(text);
  const LibsvmSummary s = scan_libsvm(in);
  CHECK(s.rows == 3 && s.min_index == 1 && s.max_index == 3 && s.all_integer_labels);
  const LibsvmLayout layout = libsvm_layout(s);
  CHECK(layout.offset == 1 && layout.n_features == 3 && layout.integer_labels);
  std::istringstream again(text);
  LibsvmReader reader(again, layout);
  RowMatrix X;
  Vector y;
  std::vector<std::int64_t> lines;
  CHECK(reader.read_chunk(2, X, y, &lines) == 2);
  CHECK(X.rows() == 2 && X.cols() == 3 && X(0, 0) == 2.0 && X(0, 2) == 1.5 && X(1, 0) == 0.0);
  CHECK(y(0) == 1.0 && y(1) == -1.0 && (lines == std::vector<std::int64_t>{2, 4}));
  CHECK(reader.read_chunk(2, X, y, &lines) == 1 && X(0, 1) == -4e-3 && lines[0] == 5);
  CHECK(reader.read_chunk(2, X, y, &lines) == 0 && X.rows() == 0);

  // The layout's checks, each naming its line.
  auto fails = [](const std::string& t, LibsvmLayout l, std::int64_t want_line, LibsvmStatus want) {
    std::istringstream is(t);
    LibsvmReader r(is, l);
    RowMatrix X2;
    Vector y2;
    try {
      while (r.read_chunk(10, X2, y2) > 0) {
      }
    } catch (const LibsvmFormatError& e) {
      return e.line() == want_line && e.status() == want;
    }
    return false;
  };
  LibsvmLayout l;
  l.n_features = 3;
  CHECK(fails("1 1:2\n\n1 7:1\n", l, 3, LibsvmStatus::index_beyond_n_features));
  CHECK(fails("1 0:2\n", l, 1, LibsvmStatus::zero_index_one_based));
  l.integer_labels = true;
  CHECK(fails("1 1:2\n1.5 2:1\n", l, 2, LibsvmStatus::non_integer_label));
  l.label_int_min = -128;
  l.label_int_max = 127;
  CHECK(fails("1 1:1\n300 1:2\n", l, 2, LibsvmStatus::label_out_of_range));
  l = LibsvmLayout{};
  l.n_features = 3;
  l.value_max = 3.4028234663852886e38;
  CHECK(fails("1 1:1e300\n", l, 1, LibsvmStatus::value_out_of_range));
  l.label_max = 65504.0;
  CHECK(fails("70000.5 1:1\n", l, 1, LibsvmStatus::label_out_of_range));
  std::istringstream bad("1 1:2\n1 0:1\n");
  bool threw = false;
  try {
    scan_libsvm(bad, /*one_based=*/true);
  } catch (const LibsvmFormatError& e) {
    threw = e.line() == 2 && e.status() == LibsvmStatus::zero_index_one_based;
  }
  CHECK(threw);
}

TEST_CASE("hostile bytes: never a crash, every line accounted for") {
  std::mt19937_64 rng(12345);
  const std::string alphabet = std::string("0123456789 :.+-eE#\n\r\t\x0b\x1cinfa_x\xc3\xa9\xff\xef\xbb\xbf", 35) + '\0';
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const std::size_t n = rng() % 400;
    for (std::size_t i = 0; i < n; ++i) {
      text += rng() % 4 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    }
    // Same outcome for every block size (and no crash under the sanitizers).
    const Parsed whole = parse_in_blocks(text, text.size() + 1);
    for (std::size_t block : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
      const Parsed p = parse_in_blocks(text, block);
      CHECK(p.lines == whole.lines && p.rejected_line == whole.rejected_line && p.rejected == whole.rejected);
    }
  }
  // A huge line in small blocks: linear time, the buffer holds the line once.
  std::string huge = "1";
  for (int i = 1; i <= 200000; ++i) huge += " " + std::to_string(i) + ":0.5";
  huge += "\n-1 1:2\n";
  const Parsed p = parse_in_blocks(huge, 4096);
  CHECK(p.rows.size() == 2 && p.rows[0].indices.size() == 200000 && p.lines[1] == 2);
  // A huge token, a huge comment, embedded NULs.
  CHECK(parse_in_blocks("1 1:" + std::string(1 << 20, '5') + "\n", 1000).rejected == LibsvmStatus::nonfinite_value);
  CHECK(parse_in_blocks("1 1:2 #" + std::string(1 << 20, 'x') + "\n", 999).rows.size() == 1);
  CHECK(parse_in_blocks(std::string("1\0 1:2\n", 7), 2).rejected == LibsvmStatus::bad_label);
}

TEST_MAIN()
