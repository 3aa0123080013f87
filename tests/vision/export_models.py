"""export_models.py — the vision and recurrent models of tests/vision_models.sh,
exported by Debian's torch 1.13 / torchvision 0.14 (/usr/bin/python3) with
random weights (never downloaded, torch.manual_seed(0)).

usage: export_models.py OUTDIR NAME:OPSET...
writes OUTDIR/NAME-oOPSET.onnx, NAME-oOPSET.x.npy (the input) and
NAME-oOPSET.y.npy (torch's output for it). BatchNorm models are exported in
eval mode with training=PRESERVE, so that the BatchNormalization nodes and
their state_dict names stay (the EVAL export folds them into the convs);
NAME "resnet18_bntrain" is resnet18 in train mode (training=TRAINING:
BatchNormalization with training_mode=1, batch statistics).

Sizes are reduced where torchvision allows it (10 classes; widths and depths
below, also in docs/vision-models.md), and the inputs are tiny."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm
from torchvision.models.convnext import CNBlockConfig, ConvNeXt
from torchvision.models.vgg import make_layers


class VGG11BN(nn.Module):
    """vgg11_bn's configuration "A" with batch norm, widths / 4, and a 2-layer
    head on the globally pooled features (torchvision's head is 4096 wide on
    7x7 features: 120M parameters)."""

    def __init__(self):
        super().__init__()
        self.features = make_layers([16, "M", 32, "M", 64, 64, "M", 128, 128, "M", 128, 128, "M"], batch_norm=True)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(128, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def block(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Two levels down (max pool), up by ConvTranspose and by bilinear
    Upsample, skip connections concatenated; 2 output channels per pixel."""

    def __init__(self):
        super().__init__()
        self.e1, self.e2, self.mid = block(3, 8), block(8, 16), block(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.d2 = block(32, 16)
        self.d1 = block(16 + 8, 8)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.mid(F.max_pool2d(b, 2))
        d = self.d2(torch.cat([self.up2(c), b], 1))
        u = F.interpolate(d, scale_factor=2, mode="bilinear", align_corners=False)
        return self.head(self.d1(torch.cat([u, a], 1)))


class TCN(nn.Module):
    """A temporal conv net: causal dilated Conv1d blocks (left padding by
    F.pad), residual connections, the last time step classified."""

    def __init__(self, c=8, k=3):
        super().__init__()
        self.k = k
        self.convs = nn.ModuleList(nn.Conv1d(c, c, k, dilation=d) for d in (1, 2, 4))
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            x = x + F.relu(conv(F.pad(x, ((self.k - 1) * 2 ** i, 0))))
        return self.fc(x[:, :, -1])


class RNN(nn.Module):
    """torch.nn.LSTM (2 layers) or GRU (bidirectional), batch first, the last step classified."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=2, batch_first=True) if kind == "lstm" else \
            nn.GRU(8, 16, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(16 if kind == "lstm" else 32, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


def model(name):
    m = build(name)
    g = torch.Generator().manual_seed(2)
    for mod in m.modules():  # trained-looking BatchNorm state (fresh ones are all 0 / 1, which torch dedups)
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            c = mod.num_features
            mod.running_mean.copy_(0.1 * torch.randn(c, generator=g))
            mod.running_var.copy_(0.5 + torch.rand(c, generator=g))
            mod.weight.data.copy_(1 + 0.1 * torch.randn(c, generator=g))
            mod.bias.data.copy_(0.1 * torch.randn(c, generator=g))
    return m


def build(name):
    torch.manual_seed(0)
    if name in ("resnet18", "resnet18_bntrain"):
        return tvm.resnet18(num_classes=10)
    if name == "resnet50":  # bottleneck inner width / 4 (width_per_group 16)
        return tvm.resnet50(num_classes=10, width_per_group=16)
    if name == "mobilenet_v2":
        return tvm.mobilenet_v2(num_classes=10, width_mult=0.5)
    if name == "efficientnet_b0":
        return tvm.efficientnet_b0(num_classes=10)
    if name == "convnext_tiny":  # widths / 4, depths 1-1-2-1 (convnext_tiny: 96..768, 3-3-9-3)
        return ConvNeXt([CNBlockConfig(24, 48, 1), CNBlockConfig(48, 96, 1), CNBlockConfig(96, 192, 2),
                         CNBlockConfig(192, None, 1)], num_classes=10)
    if name == "vgg11_bn":
        return VGG11BN()
    if name == "unet":
        return UNet()
    if name == "tcn":
        return TCN()
    if name in ("lstm", "gru"):
        return RNN(name)
    raise SystemExit(f"export_models: unknown model {name}")


def example(name):
    g = torch.Generator().manual_seed(1)
    if name == "tcn":
        return torch.randn(2, 8, 32, generator=g)
    if name in ("lstm", "gru"):
        return torch.randn(2, 6, 8, generator=g)
    if name == "resnet18_bntrain":  # batch statistics of 2 x 1 x 1 values (layer4 at 32x32) amplify float noise
        return torch.randn(4, 3, 64, 64, generator=g)
    return torch.randn(2, 3, 32, 32, generator=g)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for spec in sys.argv[2:]:
        name, opset = spec.split(":")
        m, x = model(name), example(name)
        train = name.endswith("_bntrain")
        m.train(train)
        base = os.path.join(out, f"{name}-o{opset}")
        mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.PRESERVE
        with torch.no_grad():
            torch.onnx.export(m, (x,), base + ".tmp.onnx", opset_version=int(opset), input_names=["x"],
                              output_names=["logits"], training=mode, do_constant_folding=not train)
            y = m(x)  # after the export: a train-mode export must not see updated running statistics
        np.save(base + ".x.npy", x.numpy())
        np.save(base + ".y.npy", y.numpy())
        os.replace(base + ".tmp.onnx", base + ".onnx")
        print(f"exported {base}.onnx")


if __name__ == "__main__":
    main()
