// Inputs kept gzip-compressed (reports/ holds its evidence as .json.gz): the reader inflates them,
// found by gzip's magic bytes, and every subcommand reads them as it reads the plain file; a
// damaged one is one line naming it, exit 1, and nothing written.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"
#include "tools/report/read/entry.h"
#include "tools/report/read/file_text.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/read/trace.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

// What gzip(1) writes for `text`, as zlib's gzip writer makes it.
void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), int(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadBenchmarkFile(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void ExpectSameFile(const FileData& a, const FileData& b) {
  EXPECT_EQ(a.context, b.context);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const Entry &x = a.entries[i], &y = b.entries[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.real_ns, y.real_ns) << x.name;
    EXPECT_EQ(x.cpu_ns, y.cpu_ns) << x.name;
    EXPECT_EQ(x.counters, y.counters) << x.name;
    EXPECT_EQ(x.label, y.label) << x.name;
    EXPECT_EQ(x.status, y.status) << x.name;
    EXPECT_TRUE(x.fields() == y.fields()) << x.name;
  }
}

class Gzip : public testing::TempDirTest {
 protected:
  std::string Path(const std::string& name) const { return dir() / name; }
};

TEST_F(Gzip, AJsonGzReadsAsTheSameJson) {
  for (const char* name : {"compare_base.json", "smoke_h100.json", "dlbench_v2_new.json"}) {
    const std::string plain = ReadFileText(Data(name));
    WriteGzip(Path(std::string(name) + ".gz"), plain);
    EXPECT_EQ(ReadFileText(Path(std::string(name) + ".gz")), plain) << name;
    ExpectSameFile(ReadBenchmarkFile(Path(std::string(name) + ".gz")),
                   ReadBenchmarkFile(Data(name)));
  }
}

// The magic bytes decide, not the name: a compressed file named .json, and a plain one named .gz.
TEST_F(Gzip, TheMagicBytesDecideNotTheName) {
  const std::string plain = ReadFileText(Data("compare_base.json"));
  ASSERT_FALSE(IsGzip(plain));
  WriteGzip(Path("compressed.json"), plain);
  ExpectSameFile(ReadBenchmarkFile(Path("compressed.json")),
                 ReadBenchmarkFile(Data("compare_base.json")));
  const std::string named_gz = dir().Write("plain.json.gz", plain);
  ExpectSameFile(ReadBenchmarkFile(named_gz), ReadBenchmarkFile(Data("compare_base.json")));
  // The monitor's trace goes through the same reader.
  WriteGzip(Path("trace.csv.gz"), ReadFileText(Data("monitor_trace.csv")));
  EXPECT_EQ(ReadTrace(Path("trace.csv.gz")).samples.size(),
            ReadTrace(Data("monitor_trace.csv")).samples.size());
}

// Members one after another (`cat a.gz b.gz`) are one file to gzip(1), and to the reader.
TEST_F(Gzip, ConcatenatedMembersAreOneText) {
  const std::string plain = ReadFileText(Data("compare_base.json"));
  const size_t half = plain.size() / 2;
  WriteGzip(Path("a.gz"), plain.substr(0, half));
  WriteGzip(Path("b.gz"), plain.substr(half));
  const std::string both = dir().Write("both.json.gz", dir().Read("a.gz") + dir().Read("b.gz"));
  EXPECT_EQ(ReadFileText(both), plain);
}

TEST_F(Gzip, ADamagedStreamIsOneLineNamingTheFile) {
  const std::string plain = ReadFileText(Data("compare_base.json"));
  WriteGzip(Path("good.json.gz"), plain);
  const std::string gz = dir().Read("good.json.gz");
  ASSERT_TRUE(IsGzip(gz));
  std::string flipped = gz;
  flipped[gz.size() / 2] = static_cast<char>(flipped[gz.size() / 2] ^ 0x55);
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] = static_cast<char>(bad_crc[gz.size() - 6] ^ 0x01);  // CRC-32 trailer
  const struct {
    std::string name, bytes, says;
  } cases[] = {{"truncated.json.gz", gz.substr(0, gz.size() / 2), "truncated"},
               {"header_only.json.gz", gz.substr(0, 2), "truncated"},
               {"flipped.json.gz", flipped, "corrupt gzip"},
               {"bad_crc.json.gz", bad_crc, "corrupt gzip"},
               {"trailing.json.gz", gz + "garbage", "bytes after the end"}};
  for (const auto& c : cases) {
    const std::string path = dir().Write(c.name, c.bytes);
    const std::string err = ErrorOf(path);
    EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(GzipNames, AFolderTakesJsonAndJsonGz) {
  EXPECT_TRUE(IsJsonFileName("gemm.json"));
  EXPECT_TRUE(IsJsonFileName("gemm.json.gz"));
  EXPECT_FALSE(IsJsonFileName("gemm.csv.gz"));
  EXPECT_FALSE(IsJsonFileName("trace.csv"));
  EXPECT_FALSE(IsJsonFileName(".json"));
}

// The binary end to end: every subcommand that reads a JSON gives the same output for the plain
// file and its gzip copy under the same name (so the outputs, which name it, compare byte for
// byte).
class GzipCli : public testing::TempDirTest {
 protected:
  struct Result {
    int rc;
    std::string out, err;
  };
  // Runs `args` in `folder` of the test's folder.
  Result Run(const std::string& folder, const std::string& args) const {
    const std::string cmd = "cd " + (dir() / folder) + " && " + DLB_REPORT_EXE + " " + args + " >" +
                            (dir() / "out") + " 2>" + (dir() / "err");
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, dir().Read("out"), dir().Read("err")};
  }
  // plain/ and gz/ each hold the inputs under their own names, gz/'s compressed.
  void SetUp() override {
    for (const char* name : {"compare_base.json", "compare_new.json", "smoke_h100.json",
                             "gpus_h1.json", "gpus_h2.json", "train_synthetic.json"}) {
      const std::string text = ReadFileText(Data(name));
      dir().Write(std::string("plain/") + name, text);
      fs::create_directories(dir().path() / "gz");
      WriteGzip(dir() / ("gz/" + std::string(name)), text);
    }
  }
};

TEST_F(GzipCli, EverySubcommandReadsTheGzipAsThePlainFile) {
  const struct {
    std::string args;
    int rc;
  } runs[] = {{"summary compare_base.json", 0},
              {"compare compare_base.json compare_new.json", 3},
              {"compare compare_base.json compare_new.json --as-compare-py", 3},
              {"speedup smoke_h100.json", 0},
              {"sweep smoke_h100.json", 0},
              {"sweep --axis gpus gpus_h1.json gpus_h2.json", 0},
              {"train train_synthetic.json", 0},
              {"report smoke_h100.json --out-dir out && cat out/report.md", 0},
              {"history add --db h.sqlite compare_base.json compare_new.json && " +
                   std::string(DLB_REPORT_EXE) + " history show --db h.sqlite",
               0}};
  for (const auto& r : runs) {
    const Result plain = Run("plain", r.args);
    const Result gz = Run("gz", r.args);
    EXPECT_EQ(plain.rc, r.rc) << r.args << ": " << plain.err;
    EXPECT_EQ(gz.rc, r.rc) << r.args << ": " << gz.err;
    EXPECT_FALSE(plain.out.empty()) << r.args;
    EXPECT_EQ(gz.out, plain.out) << r.args;
  }
}

TEST_F(GzipCli, AFolderOfJsonGzIsRead) {
  for (const char* name : {"compare_base.json", "smoke_h100.json"})
    fs::rename(dir().path() / "gz" / name, dir().path() / "gz" / (std::string(name) + ".gz"));
  const Result r = Run("gz", "summary .");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("BM_"), std::string::npos) << r.out;        // compare_base.json.gz
  EXPECT_NE(r.out.find("gemm/gpu/"), std::string::npos) << r.out;  // smoke_h100.json.gz
}

// A damaged .json.gz among good inputs: one line naming it, exit 1, no output file and no history.
TEST_F(GzipCli, ADamagedGzipFailsBeforeAnythingIsWritten) {
  const std::string gz = dir().Read("gz/compare_new.json");
  dir().Write("gz/cut.json.gz", gz.substr(0, gz.size() - 9));
  for (const std::string& args :
       {std::string("summary compare_base.json cut.json.gz -o r.md"),
        std::string("report compare_base.json cut.json.gz --out-dir r"),
        std::string("compare compare_base.json cut.json.gz -o r.md"),
        std::string("history add --db r.sqlite compare_base.json cut.json.gz")}) {
    const Result r = Run("gz", args);
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("cut.json.gz: corrupt gzip: truncated"), std::string::npos) << r.err;
    for (const char* written : {"r.md", "r", "r.sqlite"})
      EXPECT_FALSE(fs::exists(dir().path() / "gz" / written)) << args << " wrote " << written;
  }
}

}  // namespace
}  // namespace dlb::report
