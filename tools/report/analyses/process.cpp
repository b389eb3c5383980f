#include "tools/report/analyses/process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

extern char** environ;

namespace dlb::report {

namespace {

volatile sig_atomic_t g_signal = 0;
void OnSignal(int s) { g_signal = s; }

}  // namespace

SignalGuard::SignalGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kCount; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

SignalGuard::~SignalGuard() {
  for (size_t i = 0; i < kCount; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

int CaughtSignal() { return g_signal; }

int RunProcess(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log,
               const std::map<std::string, std::string>& env, bool forward) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) env_text.push_back(kv);
  }
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || chdir(cwd.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);
  int status = 0;
  bool sent = false;
  auto since = std::chrono::steady_clock::now();
  for (;;) {
    pid_t r = waitpid(pid, &status, sent ? WNOHANG : 0);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return 127;
    if (g_signal && forward && !sent) {
      kill(-pid, SIGTERM);
      sent = true;
      since = std::chrono::steady_clock::now();
    }
    if (sent) {
      if (std::chrono::steady_clock::now() - since > std::chrono::seconds(3)) kill(-pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::string LastLine(const std::string& path) {
  std::string text = Trim(ReadText(path));
  size_t nl = text.rfind('\n');
  std::string line = Trim(nl == std::string::npos ? text : text.substr(nl + 1));
  if (line.size() > 200) line = line.substr(0, 197) + "...";
  return line.empty() ? "no output" : line;
}

}  // namespace dlb::report
