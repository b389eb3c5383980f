// The training family's models, written with torch::nn (LibTorch has no model zoo, and
// torchvision's C++ models are deprecated). Architectures follow the sources the workload CSVs
// cite: torchvision's ResNet-18/50 (v1.5), DenseNet-121 and VGG-16 (without the classifier's
// dropout: its masks would differ between devices, and it costs a few elementwise passes), the
// CIFAR ResNet-18 of kuangliu/pytorch-cifar, the Keras cats-vs-dogs CNN, and the 1000-512-256-2
// MLP. tools/peers/pytorch-peer builds the same networks in Python.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace dlb::libtorch {

// One conv or linear layer as a forward pass met it: the rows of the workload CSVs.
struct LayerRecord {
  bool conv = true;
  int64_t c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, stride = 1, pad = 0, dilation = 1, groups = 1;
  int64_t in = 0, out = 0;  // linear layers
};

// While one is alive on this thread, every Conv and Linear below records its input's shape.
class LayerTrace {
 public:
  LayerTrace();
  ~LayerTrace();
  LayerTrace(const LayerTrace&) = delete;
  LayerTrace& operator=(const LayerTrace&) = delete;
  const std::vector<LayerRecord>& layers() const { return layers_; }
  static void Record(const LayerRecord& r);

 private:
  std::vector<LayerRecord> layers_;
  LayerTrace* previous_;
};

// torch::nn::Conv2d / Linear that report to the active LayerTrace.
class ConvImpl : public torch::nn::Module {
 public:
  ConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad, bool bias);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv_{nullptr};
  int64_t out_, kernel_, stride_, pad_;  // square kernels, dilation 1, one group: all models'
};
TORCH_MODULE(Conv);

class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear linear_{nullptr};
};
TORCH_MODULE(Linear);

// Every model: images (or MLP features) in, logits out.
class Net : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

struct ModelSpec {
  std::string name;
  int64_t channels = 3, image = 0, classes = 0;  // image 0: the MLP
  std::vector<int64_t> widths;                   // the MLP's
};

// The model's input, one sample: {channels, image, image}, or {widths[0]} for the MLP.
std::vector<int64_t> SampleShape(const ModelSpec& spec);

// A freshly initialised model on the CPU in f32. Initialisation draws from LibTorch's CPU
// generator, which this seeds first: the same (spec, seed) gives the same weights every time.
// Unknown name: dlb::Error naming the known ones.
std::shared_ptr<Net> MakeModel(const ModelSpec& spec, uint64_t seed);

// The model names MakeModel knows.
std::vector<std::string> ModelNames();

}  // namespace dlb::libtorch
