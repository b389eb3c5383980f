// The fastest of the implementations oneDNN offers for a matmul, timed on the host (the
// inference op's products, kernels/onednn/infer.cpp). Internal to kernels/onednn.
#pragma once

#include <cstddef>
#include <dnnl.hpp>
#include <string>

namespace dlb::onednn {

// One of oneDNN's implementations of a matmul, built, with the layouts it asks for.
struct MatmulImpl {
  std::string name;
  dnnl::matmul prim;
  dnnl::memory::desc src, weights, dst;
  size_t scratch = 0;
};

// The implementation pd names, built.
MatmulImpl Built(const dnnl::matmul::primitive_desc& pd);

// The fastest of every implementation oneDNN offers for a matmul (reference ones aside, unless
// they are all it offers), each timed on single products after a warm-up (the fastest of at least
// 3 runs and 5 ms, the two best timed again), under the caller's thread count: at one token a
// step its first choice is not always its fastest (AMX brgemm streamed a 1B-class model's weights
// at 16-17 GB/s where AVX-512 bf16's read 21-22 on one Sapphire Rapids host with oneDNN 2.6, and
// its tile set-up costs a tiny model's products microseconds). `offered` gets how many there were.
MatmulImpl FastestMatmul(const dnnl::memory::desc& src, const dnnl::memory::desc& wei,
                         const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr,
                         int* offered);

}  // namespace dlb::onednn
