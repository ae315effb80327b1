// write_file_bytes (io.hpp): the file is always either its old content or all of the new one.
// It writes a uniquely named temporary file in the target's directory and renames it over the
// target, so concurrent writers never interleave and a failed write leaves the old file; a
// symlink is written through; nothing is left behind.
#include <budgetkernel/budgetkernel.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace fs = std::filesystem;
using budgetkernel::read_file_bytes;
using budgetkernel::write_file_bytes;

namespace {

// A fresh empty directory under the system's temporary directory, removed at scope exit.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const char* name) {
    path = fs::temp_directory_path() / (std::string("bk_test_write_file_") + name + "_" +
                                        std::to_string(static_cast<unsigned long long>(
                                            std::hash<std::thread::id>()(std::this_thread::get_id()))));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string content(char fill, std::size_t n) { return std::string(n, fill); }

}  // namespace

TEST_CASE("write_file_bytes writes a new file and replaces an existing one") {
  ScratchDir dir("basic");
  const std::string p = (dir.path / "m.bkm").string();
  write_file_bytes(p, "first");
  CHECK(read_file_bytes(p) == "first");
  write_file_bytes(p, "second, longer");
  CHECK(read_file_bytes(p) == "second, longer");
  write_file_bytes(p, "");
  CHECK(read_file_bytes(p).empty());
  CHECK(dir.listing() == std::vector<std::string>{"m.bkm"});
}

TEST_CASE("write_file_bytes leaves an existing target and no temporary file when it fails") {
  ScratchDir dir("fail");
  fs::create_directory(dir.path / "a_directory");
  bool threw = false;
  try {
    write_file_bytes((dir.path / "a_directory").string(), "bytes");
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("a_directory") != std::string::npos;
  }
  CHECK(threw);
  CHECK(fs::is_directory(dir.path / "a_directory") && fs::is_empty(dir.path / "a_directory"));
  CHECK(dir.listing() == std::vector<std::string>{"a_directory"});
  // a directory that does not exist: nothing is created anywhere
  CHECK_THROWS(write_file_bytes((dir.path / "missing" / "m.bkm").string(), "bytes"));
  CHECK(dir.listing() == std::vector<std::string>{"a_directory"});
}

TEST_CASE("concurrent writers to one path leave one complete file") {
  // Written in place, two writers interleaved (or one truncated the other's file while it was
  // read). Each round: two threads each write their own 1 MB content; the result is exactly one.
  ScratchDir dir("threads");
  const std::string p = (dir.path / "shared.bkm").string();
  const std::string a = content('a', 1 << 20), b = content('b', (1 << 20) + 17);
  for (int round = 0; round < 50; ++round) {
    std::thread ta([&] { write_file_bytes(p, a); });
    std::thread tb([&] { write_file_bytes(p, b); });
    ta.join();
    tb.join();
    const std::string got = read_file_bytes(p);
    CHECK(got == a || got == b);
  }
  CHECK(dir.listing() == std::vector<std::string>{"shared.bkm"});
}

#ifndef _WIN32
TEST_CASE("write_file_bytes writes through a symlink to its target") {
  ScratchDir dir("symlink");
  fs::create_directory(dir.path / "real");
  const fs::path target = dir.path / "real" / "m.bkm";
  write_file_bytes(target.string(), "old");
  fs::create_symlink(target, dir.path / "link.bkm");
  write_file_bytes((dir.path / "link.bkm").string(), "new");
  CHECK(fs::is_symlink(dir.path / "link.bkm"));
  CHECK(fs::read_symlink(dir.path / "link.bkm") == target);
  CHECK(read_file_bytes(target.string()) == "new");
  CHECK(dir.listing() == (std::vector<std::string>{"link.bkm", "real"}));
  // a relative, dangling link: resolved against its own directory, its target created
  fs::create_directory(dir.path / "sub");
  fs::create_symlink(fs::path("..") / "made.bkm", dir.path / "sub" / "rel.bkm");
  write_file_bytes((dir.path / "sub" / "rel.bkm").string(), "made");
  CHECK(fs::is_symlink(dir.path / "sub" / "rel.bkm"));
  CHECK(read_file_bytes((dir.path / "made.bkm").string()) == "made");
}
#endif

TEST_CASE("a model saved through write_file_bytes loads back") {
  ScratchDir dir("model");
  budgetkernel::BSGDParams p;
  p.budget = 5;
  budgetkernel::KernelPegasos learner(2, 2, p);
  budgetkernel::RowMatrix X(4, 2);
  X << 0, 1, 1, 0, -1, 0, 0, -1;
  budgetkernel::IndexVector y(4);
  y << 1, 1, 0, 0;
  learner.partial_fit(X, y);
  budgetkernel::FieldMap fm;
  learner.save(fm);
  const std::string p_model = (dir.path / "m.bkm").string();
  write_file_bytes(p_model, fm.to_bytes());
  const budgetkernel::Model m = budgetkernel::load_model(p_model);
  CHECK((m.decision_function(X) - learner.decision_function(X)).cwiseAbs().maxCoeff() == 0.0);
}

TEST_MAIN()
