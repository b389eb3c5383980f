#include "kernels/nccl/launch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>

#include "kernels/common/error.h"

namespace dlb::nccl {
namespace {

int ProcessesFrom(const std::map<std::string, std::string>& env) {
  return LauncherProcesses([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Launch, ReadsTheLaunchersEnvironment) {
  EXPECT_EQ(ProcessesFrom({}), 0);
  EXPECT_EQ(ProcessesFrom({{"HOME", "/root"}}), 0);
  EXPECT_EQ(ProcessesFrom({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}}), 2);
  EXPECT_EQ(ProcessesFrom({{"PMI_SIZE", "4"}}), 4);
  EXPECT_EQ(ProcessesFrom({{"SLURM_STEP_NUM_TASKS", "8"}}), 8);
  EXPECT_EQ(ProcessesFrom({{"PMIX_RANK", "0"}}), 1);
}

LaunchEnv EnvFrom(const std::map<std::string, std::string>& env) {
  return DetectLaunch([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Launch, DetectsEachLaunchersEnvironment) {
  EXPECT_EQ(EnvFrom({{"HOME", "/root"}}).launcher, "");
  EXPECT_EQ(EnvFrom({}).size, 1);

  const LaunchEnv ompi = EnvFrom({{"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(ompi.launcher, "mpirun");
  EXPECT_EQ(ompi.rank, 3);
  EXPECT_EQ(ompi.size, 4);
  EXPECT_EQ(ompi.local_rank, 1);

  const LaunchEnv torch = EnvFrom({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "0"},
                                   {"LOCAL_WORLD_SIZE", "1"},
                                   {"MASTER_ADDR", "node7"},
                                   {"MASTER_PORT", "29500"}});
  EXPECT_EQ(torch.launcher, "torchrun");
  EXPECT_EQ(torch.rank, 1);
  EXPECT_EQ(torch.size, 2);
  EXPECT_EQ(torch.local_rank, 0);
  EXPECT_EQ(torch.master_addr, "node7");
  EXPECT_EQ(torch.master_port, 29500);
  // torchrun itself: its agent's store is on MASTER_PORT, the rendezvous on the next port.
  EXPECT_EQ(EnvFrom({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_PORT", "29500"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
                .master_port,
            29501);

  const LaunchEnv slurm = EnvFrom({{"SLURM_PROCID", "5"},
                                   {"SLURM_STEP_NUM_TASKS", "8"},
                                   {"SLURM_NTASKS", "16"},
                                   {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.size, 8);  // the step's tasks, not the job's
  EXPECT_EQ(slurm.local_rank, 1);
  EXPECT_EQ(slurm.master_port, 0);
  EXPECT_EQ(EnvFrom({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).size, 2);
  // A batch script's environment (the job's id, no task count) is no launch.
  EXPECT_EQ(EnvFrom({{"SLURM_JOB_ID", "12"}, {"SLURM_PROCID", "0"}}).launcher, "");

  // Open MPI inside a Slurm allocation: mpirun's own variables win.
  EXPECT_EQ(EnvFrom({{"OMPI_COMM_WORLD_SIZE", "2"},
                     {"OMPI_COMM_WORLD_RANK", "0"},
                     {"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "1"}})
                .launcher,
            "mpirun");
}

TEST(Launch, BadLauncherValuesAreOneLineErrors) {
  auto message = [](const std::map<std::string, std::string>& env) -> std::string {
    try {
      EnvFrom(env);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("rank 2 of 2"), std::string::npos);
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000"),
            std::string::npos);
  for (const auto& env : {std::map<std::string, std::string>{{"RANK", "2"}, {"WORLD_SIZE", "2"}},
                          std::map<std::string, std::string>{{"WORLD_SIZE", "0"}, {"RANK", "0"}}})
    EXPECT_EQ(message(env).find('\n'), std::string::npos);
}

// A free TCP port on the loopback (bound, read back, closed: the rendezvous binds it next).
int FreePort() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// What one rank of a torchrun-style launch agrees on with the others, as a line of text.
std::string Agree(const LaunchEnv& env) {
  std::unique_ptr<Launch> l = StartTcp(env, 20);
  uint64_t id[4] = {0, 0, 0, 0};
  if (l->rank() == 0) id[0] = 0x1234, id[3] = 0xabcdef;
  l->Broadcast(id, sizeof id);
  const double max = l->Max(1.5 + l->rank());
  const bool same = l->Same(7);
  const bool differ = l->Same(uint64_t(l->rank()));
  std::string gathered;
  for (const std::string& s : l->AllGather("r" + std::to_string(l->rank()))) gathered += s + ",";
  const std::string first = l->FirstError(l->rank() == 1 ? "out of memory" : "");
  return std::to_string(id[0]) + " " + std::to_string(id[3]) + " " + std::to_string(max) + " " +
         std::to_string(same) + std::to_string(differ) + " " + gathered + " " + first + " | " +
         l->how() + " | " + std::to_string(l->local_rank()) + "/" + std::to_string(l->local_size());
}

// Two processes on this host, torchrun's variables, the rank 1 started first (it retries until
// rank 0 listens): both agree on rank 0's id and on the values.
TEST(Launch, TcpRendezvousOfTwoProcessesAgrees) {
  const int port = FreePort();
  LaunchEnv env;
  env.launcher = "torchrun";
  env.size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string line;
    try {
      LaunchEnv mine = env;
      mine.rank = 1;
      line = Agree(mine);
    } catch (const std::exception& e) {
      line = std::string("error: ") + e.what();
    }
    (void)!::write(fds[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  ::usleep(200 * 1000);
  std::string zero;
  try {
    zero = Agree(env);
  } catch (const std::exception& e) {
    zero = std::string("error: ") + e.what();
  }
  std::string one;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) one.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::string agreed = std::to_string(0x1234) + " " + std::to_string(0xabcdef) + " " +
                             std::to_string(2.5) + " 10 r0,r1,";
  EXPECT_EQ(zero.rfind(agreed + " out of memory (rank 1) | torchrun, tcp rendezvous at 127.0.0.1:" +
                           std::to_string(port) + ", 2 processes on 1 host | 0/2",
                       0),
            0u)
      << zero;
  EXPECT_EQ(one.rfind(agreed + " out of memory | torchrun", 0), 0u) << one;
  EXPECT_NE(one.find("| 1/2"), std::string::npos) << one;
}

// A rank that never comes: rank 0 ends the rendezvous at its deadline with one line.
TEST(Launch, TcpRendezvousWithoutTheOtherRankEndsAtItsDeadline) {
  LaunchEnv env;
  env.launcher = "torchrun";
  env.size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = FreePort();
  try {
    StartTcp(env, 0.3);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("did not join in time (rank 1)"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  env.rank = 1;
  try {
    StartTcp(env, 0.3);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not reach rank 0"), std::string::npos) << e.what();
  }
}

TEST(Launch, OneProcessAgreesWithItself) {
  std::unique_ptr<Launch> one = SingleProcess();
  EXPECT_EQ(one->rank(), 0);
  EXPECT_EQ(one->size(), 1);
  EXPECT_EQ(one->Max(2.5), 2.5);
  EXPECT_TRUE(one->Same(123));
  EXPECT_EQ(one->AllGather("x"), std::vector<std::string>{"x"});
  EXPECT_EQ(one->FirstError(""), "");
  EXPECT_EQ(one->FirstError("out of memory: needs 2 GiB"), "out of memory: needs 2 GiB");
  EXPECT_FALSE(one->launched());  // no launcher: the binary may run itself again
  EXPECT_TRUE(SingleProcess(true)->launched());
}

// The launch is the harness's process group (kernels/common/process_group.h): what the harness
// and the data-parallel step ask of it, without naming the launch.
TEST(Launch, IsTheRunsProcessGroup) {
  std::unique_ptr<Launch> one = SingleProcess();
  ProcessGroup& group = *one;
  EXPECT_EQ(group.size(), 1);
  EXPECT_EQ(group.FirstError("why"), "why");
  EXPECT_FALSE(HostName().empty());
}

}  // namespace
}  // namespace dlb::nccl
