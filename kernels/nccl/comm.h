// The communicator a collective case runs on, and how a run builds it:
//   - one process per GPU (MPI): rank 0's ncclGetUniqueId reaches every process (the caller
//     broadcasts it), each calls ncclCommInitRank for its own GPU;
//   - one process for every local GPU: ncclCommInitAll, collectives issued in group calls.
// Either way NVLink multicast (NVLS) stays off: see DisableMulticast.
//
// Communicators are blocking (NCCL's default), as nccl-tests' and PyTorch's: a non-blocking
// communicator launches every group call from a thread NCCL starts for it, which cost a 1 MiB
// all-reduce on 2 GPUs ~50 us more than nccl-tests' 16 us. The deadline (--dlb_comm_timeout) is
// kept three ways:
//   - the init runs on a thread of its own, waited for until the deadline (a blocking init cannot
//     be interrupted: past it, the thread is left behind and CommTimeout thrown);
//   - every wait for the GPUs (WaitOrAbort) polls the CUDA work and NCCL's asynchronous errors
//     against the deadline and aborts the communicator past it (ncclCommAbort: NCCL kernels
//     still waiting for a peer return);
//   - a call that blocks the host inside NCCL (an enqueue whose queue is full behind kernels
//     waiting for a frozen peer, a connection set up on first use) runs Watched: the process's
//     watchdog thread aborts the communicator once the deadline passes, which makes the call
//     return (PyTorch's NCCL watchdog does the same).
// A timeout or an asynchronous error throws CommTimeout or CommFailed with one line; every later
// use throws it again (RequireUsable).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
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
  // the deadline; `what` names them in the error ("all_reduce 1048576 B bf16"). Needed only after
  // a call returned ncclInProgress (a non-blocking communicator: none made here); harmless
  // otherwise. Throws CommTimeout or CommFailed (the communicator aborted), or the abort's error
  // if already aborted.
  void Settle(const std::string& what) { Settle(what, Deadline()); }
  void Settle(const std::string& what, Clock::time_point deadline);

  // ncclCommAbort on every member: their NCCL kernels stop waiting for peers. `why` is the line
  // every later use throws (RequireUsable). Safe to call twice, and from the watchdog's thread.
  // Bounded: an abort that does not return within a few seconds (its reclaim waits for CUDA
  // graphs that captured the communicator) goes on on a thread of its own.
  void Abort(const std::string& why);
  bool aborted() const { return state_ && state_->aborted.load(std::memory_order_acquire); }
  std::string abort_reason() const;
  // Throws CommFailed with the abort's reason once aborted.
  void RequireUsable() const;

  // While alive, the process's watchdog aborts the communicator once `deadline` (plus a grace of
  // a few seconds, so that a polled wait with the same deadline speaks first) passes, with the
  // line TimeoutMessage(what, first rank, timeout_s()). Wrap the NCCL calls that may block the
  // host; then Check() after them throws that line if it fired (a blocked call returned because
  // of it, with an error of its own that says less).
  class Watched {
   public:
    Watched(Communicator& comm, const std::string& what, Clock::time_point deadline);
    ~Watched() = default;
    Watched(const Watched&) = delete;
    Watched& operator=(const Watched&) = delete;
    // Disarms; throws CommTimeout when the watchdog aborted the communicator.
    void Check();

   private:
    Communicator& comm_;
    Armed armed_;
  };

  // The first member's async error other than ncclSuccess/ncclInProgress: its rank and the error
  // ("ncclRemoteError: ..."), or rank -1 when there is none.
  std::pair<int, std::string> AsyncError() const;

 private:
  void Close() noexcept;

  // What the watchdog's thread and this one share: the abort, decided once under the mutex.
  struct State {
    std::mutex mu;
    std::atomic<bool> aborted{false};
    std::string reason;
    std::vector<ncclComm_t> comms;  // the members' communicators, for an abort from another thread
  };

  // Aborts st's communicators and keeps `why` as the reason, the first time only (under st.mu):
  // Abort on this thread and the watchdog's on its own both come here.
  static void AbortOnce(State& st, const std::string& why);

  int ranks_ = 0;
  double timeout_s_ = kDefaultTimeoutSeconds;
  std::vector<Member> members_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
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
