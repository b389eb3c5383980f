// The MPI launch: one process per GPU. Built only with MPI (DLBENCH_WITH_MPI).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/common/error.h"
#include "kernels/nccl/launch.h"

namespace dlb {

// MPI calls return a plain int: its own type gives DLB_CHECK an overload that no other int takes.
enum class MpiStatus : int {};
inline MpiStatus Mpi(int code) { return MpiStatus(code); }

inline void Check(MpiStatus status, const char* expr, const char* file, int line) {
  const int code = int(status);
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) std::strcpy(text, "unknown MPI error");
  Fail(file, line, expr, "MPI error " + std::to_string(code) + ": " + text);
}

namespace nccl {

namespace {

// The communicator of this process's host; freed before MPI_Finalize.
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm c) : c_(c) {}
  MpiComm(MpiComm&& o) noexcept : c_(o.c_) { o.c_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept {
    if (this != &o) {
      Free();
      c_ = o.c_;
      o.c_ = MPI_COMM_NULL;
    }
    return *this;
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm() { Free(); }
  MPI_Comm get() const { return c_; }
  // Forgets the communicator without freeing it (MPI is not to be touched any more).
  MPI_Comm release() {
    MPI_Comm c = c_;
    c_ = MPI_COMM_NULL;
    return c;
  }

 private:
  void Free() noexcept {
    if (c_ != MPI_COMM_NULL) DLB_CHECK_NOEXCEPT(Mpi(MPI_Comm_free(&c_)));
    c_ = MPI_COMM_NULL;
  }
  MPI_Comm c_ = MPI_COMM_NULL;
};

class MpiLaunch final : public StarLaunch {
 public:
  MpiLaunch() {
    DLB_CHECK(Mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_)));
    DLB_CHECK(Mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_)));
    MPI_Comm local = MPI_COMM_NULL;
    DLB_CHECK(Mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local)));
    local_ = MpiComm(local);
    DLB_CHECK(Mpi(MPI_Comm_rank(local_.get(), &local_rank_)));
    DLB_CHECK(Mpi(MPI_Comm_size(local_.get(), &local_size_)));
    int leaders = local_rank_ == 0 ? 1 : 0;
    DLB_CHECK(Mpi(MPI_Allreduce(MPI_IN_PLACE, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)));
    hosts_ = leaders;
  }
  ~MpiLaunch() override {
    if (!finalize()) {
      (void)local_.release();
      return;
    }
    local_ = MpiComm();
    int finalized = 0;
    DLB_CHECK_NOEXCEPT(Mpi(MPI_Finalized(&finalized)));
    if (!finalized) DLB_CHECK_NOEXCEPT(Mpi(MPI_Finalize()));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool launched() const override { return true; }
  std::string how() const override {
    return "mpi, " + std::to_string(size_) + " processes on " + std::to_string(hosts_) +
           (hosts_ == 1 ? " host" : " hosts");
  }

  // Once broken, MPI is left alone: MPI_Finalize would wait for the rank that stopped answering.
  bool finalize() const { return broken().empty(); }

 private:
  static constexpr int kToRoot = 7101, kFromRoot = 7102;
  using Clock = std::chrono::steady_clock;

  // Polls `ready` (one MPI progress step per call) until it says true or `deadline` passes
  // (false). Back to back for the first millisecond, then 20 us apart.
  template <class F>
  static bool PollBy(F ready, Clock::time_point deadline) {
    const auto start = Clock::now();
    for (;;) {
      if (ready()) return true;
      const auto now = Clock::now();
      if (now >= deadline) return false;
      if (now - start > std::chrono::milliseconds(1))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  // One message from `from` with tag `tag` by `deadline`, or nullopt.
  static bool RecvBy(int from, int tag, std::string* out, Clock::time_point deadline) {
    MPI_Status st{};
    int flag = 0;
    if (!PollBy(
            [&] {
              DLB_CHECK(Mpi(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st)));
              return flag != 0;
            },
            deadline))
      return false;
    int count = 0;
    DLB_CHECK(Mpi(MPI_Get_count(&st, MPI_CHAR, &count)));
    out->assign(size_t(count), '\0');
    DLB_CHECK(
        Mpi(MPI_Recv(out->data(), count, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE)));
    return true;
  }
  // Sends `text` to `to`, waiting for the send by `deadline`: false when it did not complete.
  bool SendBy(int to, int tag, const std::string& text, Clock::time_point deadline) {
    sent_.push_back(text);  // kept until the process ends: a send left pending must not dangle
    MPI_Request req = MPI_REQUEST_NULL;
    DLB_CHECK(Mpi(MPI_Isend(sent_.back().data(), int(sent_.back().size()), MPI_CHAR, to, tag,
                            MPI_COMM_WORLD, &req)));
    int done = 0;
    const bool ok = PollBy(
        [&] {
          DLB_CHECK(Mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE)));
          return done != 0;
        },
        deadline);
    if (ok) sent_.pop_back();
    return ok;
  }
  // Texts packed as <8-byte length><bytes>... and back.
  static std::string Pack(const std::vector<std::string>& all) {
    std::string out;
    for (const std::string& s : all) {
      const uint64_t len = s.size();
      out.append(reinterpret_cast<const char*>(&len), sizeof len);
      out += s;
    }
    return out;
  }
  std::vector<std::string> Unpack(const std::string& packed) const {
    std::vector<std::string> all;
    size_t at = 0;
    while (at + sizeof(uint64_t) <= packed.size()) {
      uint64_t len = 0;
      std::memcpy(&len, packed.data() + at, sizeof len);
      at += sizeof len;
      if (at + len > packed.size()) break;
      all.push_back(packed.substr(at, size_t(len)));
      at += size_t(len);
    }
    if (int(all.size()) != size_) throw Error("MPI: rank 0 sent a malformed agreement");
    return all;
  }

  std::string transport() const override { return "MPI"; }
  // The star exchange over point-to-point messages polled against the group's timeout (MPI's
  // collectives cannot be bounded or cancelled): every rank's text to rank 0, then rank 0's status
  // ("" or the line that broke the group) and every text to every rank.
  std::vector<std::string> Exchange(const std::string& mine, const std::string& what) override {
    RequireWhole();
    FreezePointForTests("agreement", rank_);
    const double t = timeout_s();
    const auto deadline = t > 0
                              ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(std::min(t, 1e9)))
                              : Clock::time_point::max();
    if (rank_ != 0) {
      const auto late = deadline == Clock::time_point::max()
                            ? deadline
                            : deadline + std::chrono::seconds(5);  // rank 0 speaks first
      std::string reply;
      if (!SendBy(0, kToRoot, mine, late) || !RecvBy(0, kFromRoot, &reply, late))
        Break(NoAnswerLine(0, what));
      if (reply.empty() || reply[0] != 'k')
        Break(reply.empty() ? "MPI: empty reply" : reply.substr(1));
      return Unpack(reply.substr(1));
    }
    std::vector<std::string> all(static_cast<size_t>(size_));
    all[0] = mine;
    std::string line;
    for (int r = 1; r < size_ && line.empty(); ++r)
      if (!RecvBy(r, kToRoot, &all[size_t(r)], deadline)) line = NoAnswerLine(r, what);
    const std::string reply = line.empty() ? "k" + Pack(all) : "x" + line;
    const auto soon = Clock::now() + std::chrono::seconds(5);
    for (int r = 1; r < size_; ++r)
      if (!SendBy(r, kFromRoot, reply, soon) && line.empty()) line = NoAnswerLine(r, what);
    if (!line.empty()) Break(line);
    return all;
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, hosts_ = 1;
  MpiComm local_;
  std::vector<std::string> sent_;
};

}  // namespace

std::unique_ptr<Launch> StartMpi(int* argc, char*** argv) {
  const int rc = MPI_Init(argc, argv);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(std::string("MPI_Init failed: ") + text);
  }
  // Errors come back as codes that DLB_CHECK turns into exceptions, rather than aborting the job
  // from inside MPI.
  DLB_CHECK(Mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)));
  return std::make_unique<MpiLaunch>();
}

}  // namespace nccl
}  // namespace dlb
