// The benchmark program of bisect_test.sh's repositories: Google Benchmark around a modelled op
// whose time comes from the commit's own source (op.c, compiled at each step: the op's rounds, the
// spread of its repetitions and the seed of that spread), not from the machine. A shared VM's
// neighbours move a real 229 us op by +71% for seconds at a time, which made bisect's verdicts
// (rightly) follow the neighbours; here they follow the commits, and the same commit reads the
// same times on every run. TOY_LOAD (a factor, 1 when unset) is the one way to move them: a
// neighbour's load, for the test of bisect's "machine not steady" re-check. A second case whose
// name starts with the first one's lets the test see the filter anchored.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

extern "C" {
extern const int toy_rounds;     // the op's work: rounds of a 64k-float sum
extern const double toy_noise;   // log-normal sigma of one repetition's time
extern const unsigned toy_seed;  // the spread's seed
}

namespace {

constexpr double kRoundSeconds = 57.25e-6;  // 4 rounds, the good commits: 229 us

double load = 1;

// Each call is one repetition (or one of the first repetition's trials of an iteration count):
// one draw of the spread, the same for all its iterations. One sequence per process, so a run's
// repetitions, and the iteration count Google Benchmark derives from them, repeat exactly.
void Run(benchmark::State& state, double work) {
  static std::mt19937_64 rng(toy_seed);
  std::normal_distribution<double> z;
  const double seconds = work * toy_rounds * kRoundSeconds * std::exp(toy_noise * z(rng)) * load;
  for (auto _ : state) state.SetIterationTime(seconds);
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* s = std::getenv("TOY_LOAD")) {
    char* end = nullptr;
    load = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(load > 0)) {
      std::fprintf(stderr, "bench_toy: TOY_LOAD='%s' is not a positive factor\n", s);
      return 1;
    }
  }
  benchmark::RegisterBenchmark("toy/cpu/native/sum.64k/dt:f32", [](benchmark::State& s) {
    Run(s, 1);
  })->UseManualTime();
  benchmark::RegisterBenchmark("toy/cpu/native/sum.64k.twice/dt:f32", [](benchmark::State& s) {
    Run(s, 2);
  })->UseManualTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
