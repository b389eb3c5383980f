// The MPI launch: one process per GPU. Built only with MPI (DLBENCH_WITH_MPI).
#include <mpi.h>

#include <cstring>

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

 private:
  void Free() noexcept {
    if (c_ != MPI_COMM_NULL) DLB_CHECK_NOEXCEPT(Mpi(MPI_Comm_free(&c_)));
    c_ = MPI_COMM_NULL;
  }
  MPI_Comm c_ = MPI_COMM_NULL;
};

class MpiLaunch final : public Launch {
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

  double Max(double v) override {
    DLB_CHECK(Mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)));
    return v;
  }
  bool Same(uint64_t v) override {
    uint64_t lo_hi[2] = {v, ~v};  // min of v and min of ~v (= ~max of v) in one call
    DLB_CHECK(Mpi(MPI_Allreduce(MPI_IN_PLACE, lo_hi, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD)));
    return lo_hi[0] == v && ~lo_hi[1] == v;
  }
  void Broadcast(void* data, size_t bytes) override {
    DLB_CHECK(Mpi(MPI_Bcast(data, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD)));
  }
  std::vector<std::string> AllGather(const std::string& mine) override {
    int len = int(mine.size());
    std::vector<int> lens(size_t(size_), 0), offsets(size_t(size_), 0);
    DLB_CHECK(Mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD)));
    int total = 0;
    for (int r = 0; r < size_; ++r) offsets[size_t(r)] = total, total += lens[size_t(r)];
    std::string all(size_t(total), '\0');
    DLB_CHECK(Mpi(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(),
                                 offsets.data(), MPI_CHAR, MPI_COMM_WORLD)));
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(lens[size_t(r)])));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, hosts_ = 1;
  MpiComm local_;
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
