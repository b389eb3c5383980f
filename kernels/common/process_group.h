// The processes of one run and the few things they agree on: what the harness's launched main and
// lockstep steps (fixtures/run/launched.h, fixtures/run/lockstep.h) and the code under test that
// spans several processes (kernels/torch/ddp_step.h) ask of a launch, whoever started it.
//
// Why here, at the bottom of kernels/: the launches themselves (MPI, the TCP rendezvous of
// torchrun's variables, one process) live in kernels/nccl/launch.h, which the harness may not
// include; the harness and the data-parallel step both need the same agreements of the same
// launch object. An interface the harness owned would need an adapter around the NCCL launch in
// every family that has one; here the launch implements it directly and the harness uses it
// without knowing any backend. Small on purpose: ranks and sizes, three agreements and a
// broadcast of bytes, and the first error (built on the gather). No MPI, NCCL or CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlb {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;        // this process among all of the run
  virtual int size() const = 0;        // processes of the run
  virtual int local_rank() const = 0;  // this process among those of its host
  virtual int local_size() const = 0;
  virtual std::string how() const = 0;  // "mpi, 2 processes on 1 host" / "one process"
  // Whether a launcher (mpirun, srun, torchrun) started this process, even as the only one: MPI
  // may be up, and the binary must not run itself again.
  virtual bool launched() const = 0;

  // The largest v over all processes (every process gets it).
  virtual double Max(double v) = 0;
  // Whether every process holds the same v.
  virtual bool Same(uint64_t v) = 0;
  // Rank 0's bytes, on every process.
  virtual void Broadcast(void* data, size_t bytes) = 0;
  // Every process's text, in rank order, on every process.
  virtual std::vector<std::string> AllGather(const std::string& mine) = 0;

  // "" when no process failed, else the message of the lowest failing rank (its own words on
  // that rank; others get it with " (rank r)" appended), on every process.
  std::string FirstError(const std::string& mine);

  // The longest an agreement waits for the other processes, in seconds (<= 0: no limit; 300
  // until set: the harness sets --dlb_comm_timeout). A process that does not answer in time
  // (frozen, not gone: a gone one closes its connection and fails the agreement at once) breaks
  // the group: the agreement throws one line naming the rank that stopped answering and the
  // agreement, rank 0 tells the others the same line, and every later agreement throws it at
  // once, so that the run's remaining cases fail fast and the process can exit.
  void SetTimeout(double seconds) { timeout_s_ = seconds; }
  double timeout_s() const { return timeout_s_; }
  // The line that broke the group; "" while it is whole.
  const std::string& broken() const { return broken_; }

 protected:
  // Throws broken() once the group is broken.
  void RequireWhole() const;
  // Breaks the group with `line` and throws it.
  [[noreturn]] void Break(const std::string& line);
  // "comm timeout: rank 1 stopped answering: no word in 15 s during <what>; the process group is
  // broken".
  std::string NoAnswerLine(int rank, const std::string& what) const;

 private:
  double timeout_s_ = 300;
  std::string broken_;
};

// A test-only hook: DLB_TEST_FREEZE=<point>:<n>:<rank> makes that rank stop itself (SIGSTOP) the
// n-th time it reaches `point` ("agreement": inside an agreement between the processes; "span":
// between two timed spans of a lockstep case), as a rank stuck in a driver call or on a paused
// node would. Nothing happens without the variable.
void FreezePointForTests(const char* point, int rank);

// This host's name ("unknown host" when the system does not say).
std::string HostName();

}  // namespace dlb
