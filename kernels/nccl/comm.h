// The communicator a collective case runs on, and how a run builds it:
//   - one process per GPU (MPI): rank 0's ncclGetUniqueId reaches every process (the caller
//     broadcasts it), each calls ncclCommInitRank for its own GPU;
//   - one process for every local GPU: ncclCommInitAll, collectives issued in group calls.
// Either way NVLink multicast (NVLS) stays off: see DisableMulticast.
//
// The watchdog: every communicator is non-blocking (ncclConfig_t blocking = 0) and carries a
// timeout. Its init, every collective's enqueue that NCCL leaves in progress (Settle) and every
// wait for the GPUs (WaitOrAbort) poll NCCL's asynchronous state and the CUDA work against a
// deadline; past it, or on an asynchronous error, the communicator is aborted (ncclCommAbort: the
// NCCL kernels still waiting for a peer return) and CommTimeout or CommFailed is thrown with one
// line. The peers learn it from their own deadline or from NCCL's error once this rank is gone.
//
// Non-blocking rules (NCCL's user guide): a call that returns ncclInProgress must be followed by
// polling ncclCommGetAsyncError until it leaves ncclInProgress before the next NCCL call on that
// communicator; Settle does that. It is host-only, so it may run during CUDA graph capture;
// WaitOrAbort queries streams and events, so it must not (no stream query while capturing).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/handles.h"
#include "kernels/nccl/check.h"
#include "kernels/nccl/watchdog.h"

namespace dlb::nccl {

// ncclUniqueId's bytes, so that the bootstrap can move it without the NCCL header.
using UniqueId = std::array<char, NCCL_UNIQUE_ID_BYTES>;
UniqueId NewUniqueId();

// One GPU this process drives: its device, its rank in the communicator, the communicator and the
// stream every collective of it is enqueued on.
struct Member {
  int device = 0;
  int rank = 0;
  Comm comm;
  cuda::Stream stream;
};

class Communicator {
 public:
  // One process driving `devices` (ranks 0..n-1 in that order); the current device is kept.
  // `timeout_s` bounds the init and, as the default deadline, every later wait; <= 0: none.
  static Communicator InitAll(const std::vector<int>& devices,
                              double timeout_s = kDefaultTimeoutSeconds);
  // This process's rank of `ranks`, on `device`; every process calls it with the same id. An init
  // that does not finish in `timeout_s` (a rank that never joins) is aborted: CommTimeout.
  static Communicator InitRank(const UniqueId& id, int ranks, int rank, int device,
                               double timeout_s = kDefaultTimeoutSeconds);

  Communicator() = default;
  Communicator(Communicator&& o) noexcept;
  Communicator& operator=(Communicator&& o) noexcept;
  // Finalizes and destroys every member within the timeout, and aborts those that do not finish.
  ~Communicator();

  int ranks() const { return ranks_; }
  double timeout_s() const { return timeout_s_; }
  // Now + timeout_s(): the deadline of a wait that starts now.
  Clock::time_point Deadline() const { return DeadlineAfter(timeout_s_); }
  std::vector<Member>& members() { return members_; }
  const std::vector<Member>& members() const { return members_; }

  // Polls every member until NCCL has taken the calls just made (none left ncclInProgress), by
  // the deadline; `what` names them in the error ("all_reduce 1048576 B bf16"). Call it after a
  // call or ncclGroupEnd returned ncclInProgress, before the next NCCL call. Throws CommTimeout
  // or CommFailed (the communicator aborted), or the abort's error if already aborted.
  void Settle(const std::string& what) { Settle(what, Deadline()); }
  void Settle(const std::string& what, Clock::time_point deadline);

  // ncclCommAbort on every member: their NCCL kernels stop waiting for peers. `why` is the line
  // every later use throws (RequireUsable). Safe to call twice.
  void Abort(const std::string& why);
  bool aborted() const { return !abort_reason_.empty(); }
  const std::string& abort_reason() const { return abort_reason_; }
  // Throws CommFailed with the abort's reason once aborted.
  void RequireUsable() const;

  // The first member's async error other than ncclSuccess/ncclInProgress: its rank and the error
  // ("ncclRemoteError: ..."), or rank -1 when there is none.
  std::pair<int, std::string> AsyncError() const;

 private:
  void Close() noexcept;

  int ranks_ = 0;
  double timeout_s_ = kDefaultTimeoutSeconds;
  std::string abort_reason_;
  std::vector<Member> members_;
};

// Waits until every event (or stream) has completed, polling them and the communicator's async
// errors; past `deadline` aborts the communicator and throws CommTimeout naming `what` and the
// first rank still pending; on an async error aborts and throws CommFailed. This is the whole
// step's bound for a caller that enqueued several collectives (a data-parallel step, a graph
// launch): record an event after them, then wait on it here instead of cudaEventSynchronize.
// Not during CUDA graph capture.
void WaitOrAbort(Communicator& comm, const std::vector<cudaEvent_t>& events,
                 Clock::time_point deadline, const std::string& what);
void WaitOrAbort(Communicator& comm, const std::vector<cudaStream_t>& streams,
                 Clock::time_point deadline, const std::string& what);
// The same, the deadline comm.timeout_s() from now.
void WaitOrAbort(Communicator& comm, const std::vector<cudaEvent_t>& events,
                 const std::string& what);
void WaitOrAbort(Communicator& comm, const std::vector<cudaStream_t>& streams,
                 const std::string& what);

// Sets NCCL_NVLS_ENABLE=0 unless the environment already says otherwise. NVLink SHARP (NVLS)
// makes NCCL create multicast objects (cuMulticastCreate), which on the shared multi-GPU hosts can
// take the GPUs out of service; collectives here must never use it. Called before every
// ncclCommInit*, which read the variable.
void DisableMulticast();

// "2.28.9": the NCCL library this process runs (ncclGetVersion), not the header it was built with.
std::string Version();

// "NVIDIA H200, 0000:19:00.0": the GPU's name and PCI bus id, for the run's context.
std::string DeviceSummary(int device);

}  // namespace dlb::nccl
