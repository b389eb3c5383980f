#include "kernels/torch/models.h"

#include <utility>

#include "kernels/common/error.h"
#include "kernels/common/train.h"

namespace dlb::libtorch {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

namespace {
thread_local LayerTrace* g_trace = nullptr;
}  // namespace

LayerTrace::LayerTrace() : previous_(g_trace) { g_trace = this; }
LayerTrace::~LayerTrace() { g_trace = previous_; }
void LayerTrace::Record(const LayerRecord& r) {
  if (g_trace) g_trace->layers_.push_back(r);
}

ConvImpl::ConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                   bool bias)
    : out_(out), kernel_(kernel), stride_(stride), pad_(pad) {
  conv_ = register_module(
      "conv", nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(pad).bias(bias)));
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
  if (g_trace) {
    LayerRecord r;
    r.c = x.size(1);
    r.h = x.size(2);
    r.w = x.size(3);
    r.k = out_;
    r.r = r.s = kernel_;
    r.stride = stride_;
    r.pad = pad_;
    LayerTrace::Record(r);
  }
  return conv_->forward(x);
}

LinearImpl::LinearImpl(int64_t in, int64_t out) {
  linear_ = register_module("linear", nn::Linear(in, out));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (g_trace) {
    LayerRecord r;
    r.conv = false;
    r.in = linear_->options.in_features();
    r.out = linear_->options.out_features();
    LayerTrace::Record(r);
  }
  return linear_->forward(x);
}

namespace {

nn::BatchNorm2d Bn(int64_t c) { return nn::BatchNorm2d(c); }

// ---- ResNet (torchvision models/resnet.py; CIFAR stem of kuangliu/pytorch-cifar) ----
class BasicBlock : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in, int64_t planes, int64_t stride) {
    conv1_ = register_module("conv1", Conv(in, planes, 3, stride, 1, false));
    bn1_ = register_module("bn1", Bn(planes));
    conv2_ = register_module("conv2", Conv(planes, planes, 3, 1, 1, false));
    bn2_ = register_module("bn2", Bn(planes));
    if (stride != 1 || in != planes) {
      down_conv_ = register_module("down_conv", Conv(in, planes, 1, stride, 0, false));
      down_bn_ = register_module("down_bn", Bn(planes));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    torch::Tensor id = down_conv_ ? down_bn_(down_conv_(x)) : x;
    return torch::relu(y + id);
  }

 private:
  Conv conv1_{nullptr}, conv2_{nullptr}, down_conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, down_bn_{nullptr};
};

class Bottleneck : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride) {
    const int64_t out = planes * kExpansion;
    conv1_ = register_module("conv1", Conv(in, planes, 1, 1, 0, false));
    bn1_ = register_module("bn1", Bn(planes));
    conv2_ = register_module("conv2", Conv(planes, planes, 3, stride, 1, false));  // v1.5
    bn2_ = register_module("bn2", Bn(planes));
    conv3_ = register_module("conv3", Conv(planes, out, 1, 1, 0, false));
    bn3_ = register_module("bn3", Bn(out));
    if (stride != 1 || in != out) {
      down_conv_ = register_module("down_conv", Conv(in, out, 1, stride, 0, false));
      down_bn_ = register_module("down_bn", Bn(out));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = torch::relu(bn2_(conv2_(y)));
    y = bn3_(conv3_(y));
    torch::Tensor id = down_conv_ ? down_bn_(down_conv_(x)) : x;
    return torch::relu(y + id);
  }

 private:
  Conv conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr}, down_conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr}, down_bn_{nullptr};
};

template <class Block>
class ResNet : public Net {
 public:
  ResNet(std::vector<int64_t> layers, int64_t classes, bool cifar_stem) : cifar_(cifar_stem) {
    conv1_ = register_module("conv1", cifar_ ? Conv(3, 64, 3, 1, 1, false)
                                             : Conv(3, 64, 7, 2, 3, false));
    bn1_ = register_module("bn1", Bn(64));
    int64_t in = 64;
    const int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      nn::Sequential seq;
      for (int64_t b = 0; b < layers[size_t(stage)]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        seq->push_back(std::make_shared<Block>(in, planes[stage], stride));
        in = planes[stage] * Block::kExpansion;
      }
      stages_.push_back(register_module("layer" + std::to_string(stage + 1), seq));
    }
    fc_ = register_module("fc", Linear(in, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn1_(conv1_(x)));
    if (!cifar_) x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
    for (auto& s : stages_) x = s->forward(x);
    x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);
    return fc_(x);
  }

 private:
  bool cifar_;
  Conv conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> stages_;
  Linear fc_{nullptr};
};

// ---- DenseNet-121 (torchvision models/densenet.py, memory_efficient=False) ----
class DenseLayer : public nn::Module {
 public:
  DenseLayer(int64_t in, int64_t growth, int64_t bn_size) {
    norm1_ = register_module("norm1", Bn(in));
    conv1_ = register_module("conv1", Conv(in, bn_size * growth, 1, 1, 0, false));
    norm2_ = register_module("norm2", Bn(bn_size * growth));
    conv2_ = register_module("conv2", Conv(bn_size * growth, growth, 3, 1, 1, false));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = conv1_(torch::relu(norm1_(x)));
    y = conv2_(torch::relu(norm2_(y)));
    return torch::cat({x, y}, 1);
  }

 private:
  nn::BatchNorm2d norm1_{nullptr}, norm2_{nullptr};
  Conv conv1_{nullptr}, conv2_{nullptr};
};

class Transition : public nn::Module {
 public:
  Transition(int64_t in, int64_t out) {
    norm_ = register_module("norm", Bn(in));
    conv_ = register_module("conv", Conv(in, out, 1, 1, 0, false));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return F::avg_pool2d(conv_(torch::relu(norm_(x))), F::AvgPool2dFuncOptions(2).stride(2));
  }

 private:
  nn::BatchNorm2d norm_{nullptr};
  Conv conv_{nullptr};
};

class DenseNet121 : public Net {
 public:
  explicit DenseNet121(int64_t classes) {
    const int64_t growth = 32, bn_size = 4;
    const int64_t blocks[4] = {6, 12, 24, 16};
    conv0_ = register_module("conv0", Conv(3, 64, 7, 2, 3, false));
    norm0_ = register_module("norm0", Bn(64));
    int64_t c = 64;
    for (int b = 0; b < 4; ++b) {
      nn::Sequential seq;
      for (int64_t l = 0; l < blocks[b]; ++l) {
        seq->push_back(std::make_shared<DenseLayer>(c, growth, bn_size));
        c += growth;
      }
      if (b < 3) {
        seq->push_back(std::make_shared<Transition>(c, c / 2));
        c /= 2;
      }
      blocks_.push_back(register_module("denseblock" + std::to_string(b + 1), seq));
    }
    norm5_ = register_module("norm5", Bn(c));
    fc_ = register_module("classifier", Linear(c, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(norm0_(conv0_(x)));
    x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
    for (auto& b : blocks_) x = b->forward(x);
    x = torch::relu(norm5_(x));
    x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);
    return fc_(x);
  }

 private:
  Conv conv0_{nullptr};
  nn::BatchNorm2d norm0_{nullptr}, norm5_{nullptr};
  std::vector<nn::Sequential> blocks_;
  Linear fc_{nullptr};
};

// ---- VGG-16, configuration D (torchvision models/vgg.py), classifier without dropout ----
class Vgg16 : public Net {
 public:
  explicit Vgg16(int64_t classes) {
    const int64_t cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0,
                           512, 512, 512, 0, 512, 512, 512, 0};  // 0: 2x2 max-pool
    int64_t c = 3;
    int i = 0;
    for (int64_t v : cfg) {
      if (v == 0) {
        pool_after_.push_back(int(convs_.size()) - 1);
        continue;
      }
      convs_.push_back(register_module("conv" + std::to_string(i++), Conv(c, v, 3, 1, 1, true)));
      c = v;
    }
    fc1_ = register_module("fc1", Linear(512 * 7 * 7, 4096));
    fc2_ = register_module("fc2", Linear(4096, 4096));
    fc3_ = register_module("fc3", Linear(4096, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    size_t next_pool = 0;
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = torch::relu(convs_[i](x));
      if (next_pool < pool_after_.size() && pool_after_[next_pool] == int(i)) {
        x = F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(2));
        ++next_pool;
      }
    }
    x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(7)).flatten(1);
    x = torch::relu(fc1_(x));
    x = torch::relu(fc2_(x));
    return fc3_(x);
  }

 private:
  std::vector<Conv> convs_;
  std::vector<int> pool_after_;
  Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

// ---- The cats-vs-dogs CNN: four 3x3 valid convs + ReLU + 2x2 max-pool, dense 512, dense 2 ----
class CatDog : public Net {
 public:
  CatDog(int64_t image, int64_t classes) {
    const int64_t widths[4] = {32, 32, 64, 64};
    int64_t c = 3, side = image;
    for (int i = 0; i < 4; ++i) {
      convs_.push_back(
          register_module("conv" + std::to_string(i + 1), Conv(c, widths[i], 3, 1, 0, true)));
      c = widths[i];
      side = (side - 2) / 2;
    }
    if (side <= 0) throw Error("catdog: input " + std::to_string(image) + " is too small");
    fc1_ = register_module("fc1", Linear(c * side * side, 512));
    fc2_ = register_module("fc2", Linear(512, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    for (auto& conv : convs_)
      x = F::max_pool2d(torch::relu(conv(x)), F::MaxPool2dFuncOptions(2).stride(2));
    x = torch::relu(fc1_(x.flatten(1)));
    return fc2_(x);
  }

 private:
  std::vector<Conv> convs_;
  Linear fc1_{nullptr}, fc2_{nullptr};
};

// ---- The MLP, from the seeded parameters the native steps use ----
class Mlp : public Net {
 public:
  Mlp(const std::vector<int64_t>& widths, uint64_t seed) {
    const MlpParams p = SeededMlpParams(seed, widths);
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      Linear lin = register_module("fc" + std::to_string(l + 1), Linear(widths[l], widths[l + 1]));
      torch::NoGradGuard no_grad;
      for (auto& item : lin->named_parameters()) {
        const std::string& name = item.key();
        torch::Tensor& t = item.value();
        const bool is_weight = name.find("weight") != std::string::npos;
        const std::vector<float>& src = is_weight ? p.weight[l] : p.bias[l];
        t.copy_(torch::from_blob(const_cast<float*>(src.data()), t.sizes(), torch::kFloat32));
      }
      layers_.push_back(lin);
    }
  }
  torch::Tensor forward(torch::Tensor x) override {
    for (size_t l = 0; l < layers_.size(); ++l) {
      x = layers_[l](x);
      if (l + 1 < layers_.size()) x = torch::relu(x);
    }
    return x;
  }

 private:
  std::vector<Linear> layers_;
};

}  // namespace

std::vector<int64_t> SampleShape(const ModelSpec& spec) {
  if (spec.image == 0) return {spec.widths.empty() ? 0 : spec.widths.front()};
  return {spec.channels, spec.image, spec.image};
}

std::vector<std::string> ModelNames() {
  return {"mlp", "resnet18_cifar", "resnet18", "resnet50", "densenet121", "vgg16", "catdog"};
}

std::shared_ptr<Net> MakeModel(const ModelSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  const std::string& n = spec.name;
  if (n == "mlp") return std::make_shared<Mlp>(spec.widths, seed);
  if (spec.channels != 3) throw Error(n + ": the image models take 3 input channels");
  if (n == "resnet18_cifar")
    return std::make_shared<ResNet<BasicBlock>>(std::vector<int64_t>{2, 2, 2, 2}, spec.classes,
                                                true);
  if (n == "resnet18")
    return std::make_shared<ResNet<BasicBlock>>(std::vector<int64_t>{2, 2, 2, 2}, spec.classes,
                                                false);
  if (n == "resnet50")
    return std::make_shared<ResNet<Bottleneck>>(std::vector<int64_t>{3, 4, 6, 3}, spec.classes,
                                                false);
  if (n == "densenet121") return std::make_shared<DenseNet121>(spec.classes);
  if (n == "vgg16") return std::make_shared<Vgg16>(spec.classes);
  if (n.rfind("catdog", 0) == 0) return std::make_shared<CatDog>(spec.image, spec.classes);
  throw Error("unknown model '" + n +
              "' (known: mlp, resnet18_cifar, resnet18, resnet50, densenet121, vgg16, catdog*)");
}

}  // namespace dlb::libtorch
