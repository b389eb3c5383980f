"""The CNNs and the MLP of fixtures/workloads/train_models.csv in torch.nn, as kernels/torch/models.h
builds them. Imports torch: the train and ddp runs import this module when they start."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    """kuangliu/pytorch-cifar's BasicBlock."""

    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet18(nn.Module):
    """kuangliu/pytorch-cifar's ResNet-18: a 3x3 stem without max-pool, 32x32 input, 10 classes."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, in_planes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            for s in (stride, 1):
                layers.append(BasicBlock(in_planes, planes, s))
                in_planes = planes
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, classes)

    def forward(self, x):
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


def catdog(image):
    layers, c = [], 3
    for k in (32, 32, 64, 64):
        layers += [nn.Conv2d(c, k, 3), nn.ReLU(), nn.MaxPool2d(2)]
        c = k
    side = image
    for _ in range(4):
        side = (side - 2) // 2
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(64 * side * side, 512), nn.ReLU(),
                         nn.Linear(512, 2))


def make_model(name):
    """(module, input shape without the batch, classes)."""
    if name == "mlp":
        return (nn.Sequential(nn.Linear(1000, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 2)), (1000,), 2)
    if name == "resnet18_cifar":
        return CifarResNet18(), (3, 32, 32), 10
    if name in ("catdog64", "catdog128"):
        image = int(name[len("catdog"):])
        return catdog(image), (3, image, image), 2
    import torchvision
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=1000), (3, 224, 224), 1000
    if name == "resnet50":
        return torchvision.models.resnet50(num_classes=1000), (3, 224, 224), 1000
    if name == "densenet121":
        return torchvision.models.densenet121(), (3, 224, 224), 1000
    if name == "vgg16":
        m = torchvision.models.vgg16()
        # dlbench's VGG-16 has no dropout: the classifier's two Dropout layers go.
        for i, layer in enumerate(m.classifier):
            if isinstance(layer, nn.Dropout):
                m.classifier[i] = nn.Identity()
        return m, (3, 224, 224), 1000
    raise ValueError(f"unknown model {name}")
