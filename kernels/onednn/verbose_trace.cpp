#include "kernels/onednn/verbose_trace.h"

#include <dnnl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/onednn/context.h"

namespace dlb::onednn {

namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t at; (at = s.find(sep, begin)) != std::string::npos; begin = at + 1)
    out.push_back(s.substr(begin, at - begin));
  out.push_back(s.substr(begin));
  return out;
}

bool IsMarker(const std::string& field) {
  return field == "onednn_verbose" || field == "dnnl_verbose";
}

class VerboseRecorder : public trace::Recorder {
 public:
  trace::Source source() const override { return trace::Source::kOnednnVerbose; }

  void Start() override {
    DLB_REQUIRE(saved_fd_ < 0, "the oneDNN verbose recorder was started twice");
    std::fflush(stdout);
    file_ = std::tmpfile();
    if (!file_)
      throw Error(std::string("oneDNN verbose: no temporary file: ") + std::strerror(errno));
    saved_fd_ = ::dup(STDOUT_FILENO);
    if (saved_fd_ < 0 || ::dup2(::fileno(file_), STDOUT_FILENO) < 0) {
      const std::string why = std::strerror(errno);
      Restore();
      throw Error("oneDNN verbose: cannot redirect standard output: " + why);
    }
    DLB_CHECK(dnnl_set_verbose(1));
  }

  std::vector<trace::Activity> Stop() override {
    if (saved_fd_ < 0) return {};
    dnnl_set_verbose(0);
    Restore();
    trace::Tally tally;
    std::string passed;  // what others printed meanwhile
    char* line = nullptr;
    size_t cap = 0;
    std::rewind(file_);
    for (ssize_t n; (n = ::getline(&line, &cap, file_)) > 0;) {
      std::string text(line, size_t(n));
      const std::string bare =
          !text.empty() && text.back() == '\n' ? text.substr(0, text.size() - 1) : text;
      if (auto exec = ParseVerboseLine(bare)) {
        tally.Add(exec->name, trace::kKindPrimitive, exec->ms / 1e3);
      } else if (!IsMarker(Split(bare, ',')[0])) {
        passed += text;
      }
    }
    std::free(line);
    std::fclose(file_);
    file_ = nullptr;
    if (!passed.empty()) std::fwrite(passed.data(), 1, passed.size(), stdout);
    return tally.Activities();
  }

  ~VerboseRecorder() override {
    if (saved_fd_ >= 0) Stop();
  }

 private:
  void Restore() {
    std::fflush(stdout);
    if (saved_fd_ >= 0) {
      ::dup2(saved_fd_, STDOUT_FILENO);
      ::close(saved_fd_);
      saved_fd_ = -1;
    }
  }

  std::FILE* file_ = nullptr;
  int saved_fd_ = -1;
};

}  // namespace

std::optional<VerboseExec> ParseVerboseLine(const std::string& line) {
  const std::vector<std::string> f = Split(line, ',');
  if (f.size() < 7 || !IsMarker(f[0])) return std::nullopt;
  size_t exec = 1;
  while (exec < f.size() && f[exec] != "exec") ++exec;
  // exec, engine, primitive kind, implementation, propagation kind, ..., time: the last field.
  if (exec + 5 > f.size() - 1) return std::nullopt;
  const std::string& last = f.back();
  char* end = nullptr;
  const double ms = std::strtod(last.c_str(), &end);
  if (last.empty() || (end && *end && *end != '\r') || !(ms >= 0)) return std::nullopt;
  VerboseExec e;
  e.name = f[exec + 2] + " " + f[exec + 3];
  const std::string& prop = f[exec + 4];
  if (!prop.empty() && prop != "undef") e.name += " " + prop;
  e.ms = ms;
  return e;
}

std::shared_ptr<trace::Recorder> MakeVerboseRecorder() {
  return std::make_shared<VerboseRecorder>();
}

}  // namespace dlb::onednn
