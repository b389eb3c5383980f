#include "kernels/nccl/comm.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <thread>

namespace dlb::nccl {

UniqueId NewUniqueId() {
  // The first NCCL call of rank 0 initialises the library, which reads its environment.
  DisableMulticast();
  ncclUniqueId id;
  DLB_CHECK(ncclGetUniqueId(&id));
  UniqueId out;
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

void DisableMulticast() { ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

namespace {

// Blocking, as NCCL's default (NCCL_COMM_BLOCKING=0 in the environment still makes it
// non-blocking: Settle and the polls below then do their part).
ncclConfig_t Blocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  return config;
}

// An init run on a thread of its own: what it made, and whether it returned.
struct InitJob {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<ncclComm_t> comms;
  ncclResult_t result = ncclSuccess;
  std::string error;  // an exception the init threw
};

// Runs `init` on its own thread and waits for it until `deadline`: whether it returned. Past the
// deadline the thread is left to finish or hang on its own (a blocking NCCL init cannot be
// interrupted, and its communicator is not the caller's to abort yet); it owns `job` with the
// caller, so that nothing it writes is freed under it.
bool InitBy(const std::shared_ptr<InitJob>& job, std::function<void(InitJob&)> init,
            Clock::time_point deadline) {
  std::thread t([job, init = std::move(init)] {
    try {
      init(*job);
    } catch (const std::exception& e) {
      job->error = e.what();
    }
    std::lock_guard<std::mutex> lock(job->mu);
    job->done = true;
    job->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(job->mu);
  const bool done = deadline == Clock::time_point::max()
                        ? (job->cv.wait(lock, [&] { return job->done; }), true)
                        : job->cv.wait_until(lock, deadline, [&] { return job->done; });
  lock.unlock();
  if (done)
    t.join();
  else
    t.detach();
  return done;
}

// "ncclRemoteError: remote process exited or there was a network error: <NCCL's last error>"
std::string ErrorText(ncclResult_t r) {
  std::string s = ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(nullptr); last && *last) s += std::string(": ") + last;
  return s;
}

// Polls ncclCommGetAsyncError on `comms` until none is in progress: the index and state of the
// first that failed, the index of the first still in progress at the deadline (kPending), or
// kDone.
struct Settled {
  Probe probe = Probe::kDone;
  size_t index = 0;
  ncclResult_t state = ncclSuccess;
};
Settled PollComms(const std::vector<ncclComm_t>& comms, Clock::time_point deadline) {
  Settled out;
  out.probe = PollUntil(
      [&] {
        for (size_t i = 0; i < comms.size(); ++i) {
          ncclResult_t state = ncclSuccess;
          const ncclResult_t r = ncclCommGetAsyncError(comms[i], &state);
          if (r != ncclSuccess) state = r;
          if (state == ncclInProgress) {
            out.index = i;
            return Probe::kPending;
          }
          if (state != ncclSuccess) {
            out.index = i;
            out.state = state;
            return Probe::kFailed;
          }
        }
        return Probe::kDone;
      },
      deadline);
  return out;
}

// Polls that did not end kDone: aborts `c` and throws CommTimeout (pending at the deadline, on
// rank `rank`) or CommFailed (NCCL's error; `on` names where: "" or " on rank 1").
[[noreturn]] void ThrowUnsettled(Communicator& c, const Settled& s, const std::string& what,
                                 int rank, const std::string& on) {
  if (s.probe == Probe::kPending) {
    const std::string why = TimeoutMessage(what, rank, c.timeout_s());
    c.Abort(why);
    throw CommTimeout(why);
  }
  const std::string why =
      "comm error: " + what + on + ": " + ErrorText(s.state) + "; communicator aborted";
  c.Abort(why);
  throw CommFailed(why);
}

}  // namespace

Communicator Communicator::InitAll(const std::vector<int>& devices, double timeout_s) {
  // ncclCommInitAll has no config form: its documented equivalent, one id and a group of
  // ncclCommInitRankConfig calls, one per device.
  const UniqueId id = NewUniqueId();
  int caller = 0;  // current again on return
  DLB_CHECK(cudaGetDevice(&caller));
  const auto deadline = DeadlineAfter(timeout_s);
  const std::string what = "init of " + std::to_string(devices.size()) + " ranks in one process";
  auto job = std::make_shared<InitJob>();
  const bool returned = InitBy(
      job,
      [id, devices](InitJob& j) {
        ncclUniqueId nid;
        std::memcpy(nid.internal, id.data(), id.size());
        j.comms.assign(devices.size(), nullptr);
        ncclConfig_t config = Blocking();
        DLB_CHECK(ncclGroupStart());
        ncclResult_t r = ncclSuccess;
        for (size_t i = 0; i < devices.size() && r == ncclSuccess; ++i) {
          DLB_CHECK(cudaSetDevice(devices[i]));
          r = ncclCommInitRankConfig(&j.comms[i], int(devices.size()), nid, int(i), &config);
        }
        const ncclResult_t end = ncclGroupEnd();
        j.result = r != ncclSuccess ? r : end;
      },
      deadline);
  if (!returned) throw CommTimeout(TimeoutMessage(what, 0, timeout_s));
  Communicator c;
  c.ranks_ = int(devices.size());
  c.timeout_s_ = timeout_s;
  // Owned first, so that a failure below still releases every communicator.
  for (size_t i = 0; i < devices.size(); ++i) {
    Member m;
    m.device = devices[i];
    m.rank = int(i);
    m.comm = Comm(i < job->comms.size() ? job->comms[i] : nullptr);
    if (m.comm) c.state_->comms.push_back(m.comm.get());
    c.members_.push_back(std::move(m));
  }
  if (!job->error.empty()) throw Error(job->error);
  DLB_CHECK(job->result);
  if (const Settled s = PollComms(c.state_->comms, deadline); s.probe != Probe::kDone)
    ThrowUnsettled(c, s, what, int(s.index), " on rank " + std::to_string(s.index));
  for (Member& m : c.members_) {
    DLB_CHECK(cudaSetDevice(m.device));
    m.stream = cuda::MakeStream();
  }
  DLB_CHECK(cudaSetDevice(caller));
  return c;
}

Communicator Communicator::InitRank(const UniqueId& id, int ranks, int rank, int device,
                                    double timeout_s) {
  DisableMulticast();
  DLB_CHECK(cudaSetDevice(device));
  const auto deadline = DeadlineAfter(timeout_s);
  const std::string what = "init of rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  auto job = std::make_shared<InitJob>();
  const bool returned = InitBy(
      job,
      [id, ranks, rank, device](InitJob& j) {
        ncclUniqueId nid;
        std::memcpy(nid.internal, id.data(), id.size());
        DLB_CHECK(cudaSetDevice(device));
        j.comms.assign(1, nullptr);
        ncclConfig_t config = Blocking();
        j.result = ncclCommInitRankConfig(&j.comms[0], ranks, nid, rank, &config);
      },
      deadline);
  if (!returned) throw CommTimeout(TimeoutMessage(what, rank, timeout_s));
  Communicator c;
  c.ranks_ = ranks;
  c.timeout_s_ = timeout_s;
  Member m;
  m.device = device;
  m.rank = rank;
  m.comm = Comm(job->comms.empty() ? nullptr : job->comms[0]);
  if (m.comm) c.state_->comms.push_back(m.comm.get());
  c.members_.push_back(std::move(m));
  if (!job->error.empty()) throw Error(job->error);
  DLB_CHECK(job->result);
  if (const Settled s = PollComms(c.state_->comms, deadline); s.probe != Probe::kDone)
    ThrowUnsettled(c, s, what, rank, "");
  c.members_.front().stream = cuda::MakeStream();
  return c;
}

Communicator::Communicator(Communicator&& o) noexcept
    : ranks_(o.ranks_),
      timeout_s_(o.timeout_s_),
      members_(std::move(o.members_)),
      state_(std::move(o.state_)) {
  o.members_.clear();
  o.state_ = std::make_shared<State>();
}

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  if (this != &o) {
    Close();
    ranks_ = o.ranks_;
    timeout_s_ = o.timeout_s_;
    members_ = std::move(o.members_);
    state_ = std::move(o.state_);
    o.members_.clear();
    o.state_ = std::make_shared<State>();
  }
  return *this;
}

Communicator::~Communicator() { Close(); }

void Communicator::Close() noexcept {
  // Aborted (here or by the watchdog): the communicators are gone already.
  if (aborted()) {
    for (Member& m : members_) (void)m.comm.release();
    members_.clear();
    return;
  }
  // Finalize flushes what is still queued (it blocks on a blocking communicator: the watchdog
  // bounds it); a member that does not finish in time (a peer gone) is aborted rather than left
  // to hang the process's exit.
  std::vector<ncclComm_t> comms;
  bool finished = true;
  try {
    Watched w(*this, "finalize", DeadlineAfter(timeout_s_));
    for (Member& m : members_)
      if (m.comm) {
        if (ncclCommFinalize(m.comm.get()) != ncclSuccess) finished = false;
        comms.push_back(m.comm.get());
      }
    w.Check();
  } catch (...) {
    finished = false;
  }
  if (!comms.empty() && !aborted()) {
    const Settled s = PollComms(comms, DeadlineAfter(timeout_s_));
    if (s.probe != Probe::kDone) finished = false;
  }
  if (aborted()) {
    for (Member& m : members_) (void)m.comm.release();
  } else {
    for (Member& m : members_) {
      if (!m.comm) continue;
      ncclComm_t comm = m.comm.release();
      if (finished)
        ncclCommDestroy(comm);
      else
        ncclCommAbort(comm);
    }
  }
  members_.clear();
}

void Communicator::Settle(const std::string& what, Clock::time_point deadline) {
  RequireUsable();
  std::vector<ncclComm_t> comms;
  for (const Member& m : members_) comms.push_back(m.comm.get());
  const Settled s = PollComms(comms, deadline);
  if (s.probe == Probe::kDone) return;
  const int rank = members_[s.index].rank;
  ThrowUnsettled(*this, s, what, rank, " on rank " + std::to_string(rank));
}

namespace {

// How long an abort is waited for. ncclCommAbort sets the flags that make the communicator's
// kernels return at once, then reclaims it, and the reclaim waits until every CUDA graph that
// captured one of its calls is destroyed (commDestroySync: localPersistentRefs): a data-parallel
// step's graphs outlive the abort, so that wait never ends. The abort runs on a thread of its own
// and is waited for this long; past it the thread is left behind, as a timed-out init's is.
constexpr double kAbortWaitSeconds = 2;

}  // namespace

void Communicator::AbortOnce(State& st, const std::string& why) {
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.aborted.load(std::memory_order_relaxed)) return;
  st.reason = why.empty() ? "communicator aborted" : why;
  // Set before the abort starts: AsyncError no longer asks a communicator being torn down.
  st.aborted.store(true, std::memory_order_release);
  auto aborted = std::make_shared<std::promise<void>>();
  std::future<void> done = aborted->get_future();
  std::thread([aborted, comms = st.comms] {
    for (ncclComm_t comm : comms) ncclCommAbort(comm);  // gone whatever it returns
    aborted->set_value();
  }).detach();
  done.wait_for(std::chrono::duration<double>(kAbortWaitSeconds));
}

void Communicator::Abort(const std::string& why) {
  AbortOnce(*state_, why);
  for (Member& m : members_) (void)m.comm.release();
}

std::string Communicator::abort_reason() const {
  if (!state_) return "";
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->reason;
}

void Communicator::RequireUsable() const {
  if (aborted()) throw CommFailed(abort_reason());
}

namespace {

// Grace past a wait's deadline before the watchdog aborts: the polled wait on the same deadline
// aborts first where it can, and names the rank it waited for.
constexpr double kWatchdogGraceSeconds = 2;

}  // namespace

Communicator::Watched::Watched(Communicator& comm, const std::string& what,
                               Clock::time_point deadline)
    : comm_(comm),
      armed_(Watchdog::Process(),
             deadline == Clock::time_point::max()
                 ? deadline
                 : deadline + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(kWatchdogGraceSeconds)),
             [state = comm.state_,
              line = TimeoutMessage(what, comm.members().empty() ? 0 : comm.members()[0].rank,
                                    comm.timeout_s())] { AbortOnce(*state, line); }) {}

void Communicator::Watched::Check() {
  if (armed_.Disarm()) {
    for (Member& m : comm_.members()) (void)m.comm.release();
    throw CommTimeout(comm_.abort_reason());
  }
}

std::pair<int, std::string> Communicator::AsyncError() const {
  // Under the abort's mutex: the watchdog's thread never aborts a communicator while it is asked.
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->aborted.load(std::memory_order_relaxed)) return {-1, ""};
  for (const Member& m : members_) {
    if (!m.comm) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(m.comm.get(), &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) return {m.rank, ErrorText(state)};
  }
  return {-1, ""};
}

namespace {

// One wait of WaitOrAbort over `n` items, `done(i)` querying item i (cudaSuccess when complete,
// cudaErrorNotReady while pending, anything else an error); `rank_of(i)` names its rank.
template <class Query, class RankOf>
void Wait(Communicator& comm, size_t n, Query query, RankOf rank_of, Clock::time_point deadline,
          double seconds, const std::string& what) {
  comm.RequireUsable();
  std::vector<bool> done(n, false);
  size_t pending = 0;
  std::pair<int, std::string> failed{-1, ""};
  const Probe p = PollUntil(
      [&] {
        bool all = true;
        for (size_t i = 0; i < n; ++i) {
          if (done[i]) continue;
          const cudaError_t e = query(i);
          if (e == cudaSuccess) {
            done[i] = true;
            continue;
          }
          if (e != cudaErrorNotReady) DLB_CHECK(e);
          if (all) pending = i;
          all = false;
        }
        if (all) return Probe::kDone;
        if (comm.aborted()) return Probe::kFailed;  // the watchdog's thread aborted it
        failed = comm.AsyncError();
        return failed.first >= 0 ? Probe::kFailed : Probe::kPending;
      },
      deadline);
  if (p == Probe::kDone) return;
  if (p == Probe::kPending) {
    const std::string why = TimeoutMessage(what, rank_of(pending), seconds);
    comm.Abort(why);
    throw CommTimeout(why);
  }
  if (failed.first < 0) {  // aborted by the watchdog while this wait polled
    comm.Abort("");
    throw CommTimeout(comm.abort_reason());
  }
  const std::string why = "comm error: " + what + " on rank " + std::to_string(failed.first) +
                          ": " + failed.second + "; communicator aborted";
  comm.Abort(why);
  throw CommFailed(why);
}

// The rank of the member whose item is i when there is one item per member, else the first's.
int RankOf(const Communicator& comm, size_t i) {
  const std::vector<Member>& m = comm.members();
  if (m.empty()) return 0;
  return i < m.size() ? m[i].rank : m.front().rank;
}

// The seconds a deadline gives from now, to the millisecond, for the error line.
double SecondsLeft(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return 0;
  return std::round(std::chrono::duration<double>(deadline - Clock::now()).count() * 1e3) / 1e3;
}

void WaitEvents(Communicator& comm, const std::vector<cudaEvent_t>& events,
                Clock::time_point deadline, double seconds, const std::string& what) {
  Wait(
      comm, events.size(), [&](size_t i) { return cudaEventQuery(events[i]); },
      [&](size_t i) { return RankOf(comm, i); }, deadline, seconds, what);
}

void WaitStreams(Communicator& comm, const std::vector<cudaStream_t>& streams,
                 Clock::time_point deadline, double seconds, const std::string& what) {
  Wait(
      comm, streams.size(), [&](size_t i) { return cudaStreamQuery(streams[i]); },
      [&](size_t i) { return RankOf(comm, i); }, deadline, seconds, what);
}

}  // namespace

void WaitOrAbort(Communicator& comm, const std::vector<cudaEvent_t>& events,
                 Clock::time_point deadline, const std::string& what) {
  WaitEvents(comm, events, deadline, SecondsLeft(deadline), what);
}

void WaitOrAbort(Communicator& comm, const std::vector<cudaStream_t>& streams,
                 Clock::time_point deadline, const std::string& what) {
  WaitStreams(comm, streams, deadline, SecondsLeft(deadline), what);
}

void WaitOrAbort(Communicator& comm, const std::vector<cudaEvent_t>& events,
                 const std::string& what) {
  WaitEvents(comm, events, comm.Deadline(), comm.timeout_s(), what);
}

void WaitOrAbort(Communicator& comm, const std::vector<cudaStream_t>& streams,
                 const std::string& what) {
  WaitStreams(comm, streams, comm.Deadline(), comm.timeout_s(), what);
}

std::string Version() {
  int v = 0;
  DLB_CHECK(ncclGetVersion(&v));
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}

std::string DeviceSummary(int device) {
  cudaDeviceProp p{};
  DLB_CHECK(cudaGetDeviceProperties(&p, device));
  char bus[32] = {};
  DLB_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
  return std::string(p.name) + ", " + bus;
}

}  // namespace dlb::nccl
