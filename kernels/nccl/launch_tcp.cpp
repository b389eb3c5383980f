// The TCP rendezvous launch (launch.h): rank 0 listens, every other rank holds one connection to
// it; an agreement is a gather at rank 0 and the gathered values sent back to every rank.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/common/error.h"
#include "kernels/nccl/launch.h"

namespace dlb::nccl {

namespace {

// Sent by every connecting rank first: a stray connection (a port scanner, another run on the same
// port) is told apart from a rank of this run.
constexpr uint32_t kMagic = 0x646c6231;  // "dlb1"

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Errno() { return std::strerror(errno); }

// No word from a peer by the deadline (it may be frozen: alive, its connection open, silent).
class NoWord : public Error {
 public:
  using Error::Error;
};

// How much longer than rank 0 the other ranks wait for its answer: rank 0 speaks first, naming
// the rank that stopped answering.
constexpr double kGraceSeconds = 5;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

// The whole of `bytes`; `who` names the peer in the one-line error.
void SendAll(int fd, const void* data, size_t bytes, const std::string& who) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("TCP rendezvous: " + who + " left the run (send: " + Errno() + ")");
    p += n;
    bytes -= size_t(n);
  }
}

// The whole of `bytes`; before `deadline` (0: none) or one line.
void RecvAll(int fd, void* data, size_t bytes, const std::string& who, double deadline = 0) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    if (deadline > 0) {
      pollfd pfd{fd, POLLIN, 0};
      const int left_ms = int(std::max(0.0, (deadline - Now()) * 1e3));
      const int r = ::poll(&pfd, 1, left_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) throw NoWord("TCP rendezvous: no word from " + who + " in time");
    }
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw Error("TCP rendezvous: " + who + " left the run (connection closed)");
    if (n < 0) throw Error("TCP rendezvous: " + who + " left the run (recv: " + Errno() + ")");
    p += n;
    bytes -= size_t(n);
  }
}

void SendText(int fd, const std::string& s, const std::string& who) {
  const uint64_t len = s.size();
  SendAll(fd, &len, sizeof len, who);
  SendAll(fd, s.data(), s.size(), who);
}

std::string RecvText(int fd, const std::string& who, double deadline = 0) {
  uint64_t len = 0;
  RecvAll(fd, &len, sizeof len, who, deadline);
  if (len > (uint64_t(1) << 34))
    throw Error("TCP rendezvous: " + who + " sent a malformed message");
  std::string s(size_t(len), '\0');
  RecvAll(fd, s.data(), s.size(), who, deadline);
  return s;
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct Hello {
  uint32_t magic = kMagic;
  int32_t rank = 0, size = 0;
};

class TcpLaunch final : public StarLaunch {
 public:
  TcpLaunch(const LaunchEnv& env, double deadline_s) : env_(env) {
    const double deadline = Now() + deadline_s;
    where_ = env.master_addr + ":" + std::to_string(env.master_port);
    if (env.rank == 0)
      Listen(deadline);
    else
      Connect(deadline);
    // Which processes share a host: the local rank (where the launcher gave none) and count.
    const std::vector<std::string> hosts = AllGather(HostName());
    const std::string& mine = hosts[size_t(env.rank)];
    int before = 0;
    for (int r = 0; r < env.size; ++r) {
      if (hosts[size_t(r)] != mine) continue;
      if (r < env.rank) ++before;
      ++local_size_;
    }
    local_rank_ = env.local_rank >= 0 ? env.local_rank : before;
    std::vector<std::string> distinct = hosts;
    std::sort(distinct.begin(), distinct.end());
    hosts_ = int(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  }

  int rank() const override { return env_.rank; }
  int size() const override { return env_.size; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool launched() const override { return true; }
  std::string how() const override {
    return env_.launcher + ", tcp rendezvous at " + where_ + ", " + std::to_string(env_.size) +
           " processes on " + std::to_string(hosts_) + (hosts_ == 1 ? " host" : " hosts");
  }

 private:
  std::string transport() const override { return "TCP rendezvous"; }
  // Every rank's text at rank 0, then all of them on every rank, each wait bounded by the group's
  // timeout. Rank 0 first sends a status: "" (the texts follow) or the line that broke the group.
  std::vector<std::string> Exchange(const std::string& mine, const std::string& what) override {
    RequireWhole();
    FreezePointForTests("agreement", env_.rank);
    const double t = timeout_s();
    const double deadline = t > 0 ? Now() + t : 0;
    std::vector<std::string> all(size_t(env_.size));
    if (env_.rank != 0) {
      const double late = deadline > 0 ? deadline + kGraceSeconds : 0;
      std::string status;
      try {
        SendText(root_.get(), mine, "rank 0");
        status = RecvText(root_.get(), "rank 0", late);
        if (status.empty())
          for (auto& s : all) s = RecvText(root_.get(), "rank 0", late);
      } catch (const NoWord&) {
        Break(NoAnswerLine(0, what));
      } catch (const Error& e) {
        Break(e.what());
      }
      if (!status.empty()) Break(status);
      return all;
    }
    all[0] = mine;
    std::string line;
    for (int r = 1; r < env_.size && line.empty(); ++r) {
      try {
        all[size_t(r)] = RecvText(peers_[size_t(r)].get(), "rank " + std::to_string(r), deadline);
      } catch (const NoWord&) {
        line = NoAnswerLine(r, what);
      } catch (const Error& e) {
        line = e.what();
      }
    }
    for (int r = 1; r < env_.size; ++r) {
      try {
        SendText(peers_[size_t(r)].get(), line, "rank " + std::to_string(r));
        if (line.empty())
          for (const auto& s : all)
            SendText(peers_[size_t(r)].get(), s, "rank " + std::to_string(r));
      } catch (const Error& e) {
        if (line.empty()) line = e.what();
      }
    }
    if (!line.empty()) Break(line);
    return all;
  }
  void Listen(double deadline) {
    Fd server(::socket(AF_INET6, SOCK_STREAM, 0));
    bool v6 = server.get() >= 0;
    if (!v6) server = Fd(::socket(AF_INET, SOCK_STREAM, 0));
    if (server.get() < 0) throw Error("TCP rendezvous: socket: " + Errno());
    int one = 1, zero = 0;
    ::setsockopt(server.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      ::setsockopt(server.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(uint16_t(env_.master_port));
      rc = ::bind(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(uint16_t(env_.master_port));
      rc = ::bind(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(server.get(), 128) != 0)
      throw Error("TCP rendezvous: rank 0 cannot listen on port " +
                  std::to_string(env_.master_port) + ": " + Errno());
    peers_.resize(size_t(env_.size));
    int joined = 1;
    while (joined < env_.size) {
      pollfd pfd{server.get(), POLLIN, 0};
      const int left_ms = int(std::max(0.0, (deadline - Now()) * 1e3));
      const int r = ::poll(&pfd, 1, left_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        std::string missing;
        for (int k = 1; k < env_.size; ++k)
          if (peers_[size_t(k)].get() < 0)
            missing += (missing.empty() ? "" : ", ") + std::to_string(k);
        throw Error("TCP rendezvous at " + where_ + ": " + std::to_string(env_.size - joined) +
                    " of " + std::to_string(env_.size) + " processes did not join in time (rank " +
                    missing + ")");
      }
      Fd c(::accept(server.get(), nullptr, nullptr));
      if (c.get() < 0) continue;
      Hello h;
      try {
        RecvAll(c.get(), &h, sizeof h, "a connecting process", std::min(deadline, Now() + 10));
      } catch (const Error&) {
        continue;  // not one of ours, or gone: keep waiting for the ranks
      }
      if (h.magic != kMagic) continue;
      if (h.size != env_.size)
        throw Error("TCP rendezvous: rank " + std::to_string(h.rank) + " was started as one of " +
                    std::to_string(h.size) + " processes, rank 0 as one of " +
                    std::to_string(env_.size));
      if (h.rank < 1 || h.rank >= env_.size || peers_[size_t(h.rank)].get() >= 0)
        throw Error("TCP rendezvous: two processes say they are rank " + std::to_string(h.rank));
      NoDelay(c.get());
      peers_[size_t(h.rank)] = std::move(c);
      ++joined;
    }
  }

  void Connect(double deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const std::string port = std::to_string(env_.master_port);
    std::string last = "not tried";
    for (;;) {
      addrinfo* found = nullptr;
      const int g = ::getaddrinfo(env_.master_addr.c_str(), port.c_str(), &hints, &found);
      if (g != 0) {
        last = std::string("cannot resolve ") + env_.master_addr + ": " + ::gai_strerror(g);
      } else {
        for (addrinfo* a = found; a; a = a->ai_next) {
          Fd s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
          if (s.get() < 0) continue;
          if (::connect(s.get(), a->ai_addr, a->ai_addrlen) == 0) {
            root_ = std::move(s);
            break;
          }
          last = Errno();
        }
        ::freeaddrinfo(found);
      }
      if (root_.get() >= 0) break;
      if (Now() >= deadline)
        throw Error("TCP rendezvous: rank " + std::to_string(env_.rank) +
                    " could not reach rank 0 at " + where_ + " in time (" + last + ")");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    NoDelay(root_.get());
    Hello h;
    h.rank = env_.rank;
    h.size = env_.size;
    SendAll(root_.get(), &h, sizeof h, "rank 0");
  }

  LaunchEnv env_;
  std::string where_;
  Fd root_;                // rank > 0: the connection to rank 0
  std::vector<Fd> peers_;  // rank 0: one per other rank (index 0 unused)
  int local_rank_ = 0, local_size_ = 0, hosts_ = 1;
};

}  // namespace

std::unique_ptr<Launch> StartTcp(const LaunchEnv& env, double deadline_s) {
  if (env.master_addr.empty() || env.master_port <= 0)
    throw Error("TCP rendezvous: MASTER_ADDR and MASTER_PORT must be set");
  return std::make_unique<TcpLaunch>(env, deadline_s);
}

}  // namespace dlb::nccl
