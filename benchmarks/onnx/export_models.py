#!/usr/bin/python3
"""Exports the issue-7 §4 networks to ONNX with PyTorch, random weights from a fixed seed.

Run with Debian's Python (/usr/bin/python3: python3-torch 1.13, python3-torchvision, python3-onnx):

    /usr/bin/python3 benchmarks/onnx/export_models.py --out build/onnx-models [--models mlp,cnn_small]

Models (name: what, input):
  mlp          Linear 784-128, ReLU, Linear 128-10            x: [batch, 784] (batch symbolic; saved at 64)
  mlp_b1       the same file's weights, saved input at batch 1 (no separate .onnx)
  cnn_small    a reduced CNN for `make test`: 2 x (conv 3x3, batch norm, ReLU), max pool,
               global average pool, linear                     x: [1, 3, 32, 32]
  resnet18     torchvision ResNet-18                           x: [1, 3, 224, 224]
  mobilenet_v2 torchvision MobileNetV2                         x: [1, 3, 224, 224]
  squeezenet   torchvision SqueezeNet 1.1                      x: [1, 3, 224, 224]
  encoder      nn.TransformerEncoder, 2 layers, d_model 256, 4 heads, ffn 1024, GELU,
               batch_first                                     x: [1, 128, 256]
Issue 20 §3 (only with --models, or --models=torchvision for all four), x: [1, 3, 224, 224]:
  efficientnet_b0     squeeze-and-excitation, SiLU
  mobilenet_v3_large  squeeze-and-excitation, hard-swish / hard-sigmoid
  regnet_y_800mf      grouped convolutions (group width 16) with squeeze-and-excitation
  densenet121         dense concatenation feeding 1x1 convolutions

For each model NAME the output folder gets NAME.onnx (opset --opset, default 17), NAME.x.npy (the
input) and NAME.y.npy (PyTorch's float32 output for that input), and manifest.json lists them:
{"NAME": {"onnx": ..., "input": ..., "output": ..., "dims": {"batch": 64}, "opset": 17}}. Batch
norms get random running statistics and affine parameters (otherwise they would be identities).
Nothing here is committed: the folder is a build/cache directory.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

SEED = 20261122  # every model's weights and input come from this seed


def randomize_batch_norms(model, gen):
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                m.weight.copy_(1 + torch.randn(c, generator=gen) * 0.1)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def torchvision_model(name):
    import torchvision.models as tvm
    return {"resnet18": tvm.resnet18, "mobilenet_v2": tvm.mobilenet_v2,
            "squeezenet": tvm.squeezenet1_1, "efficientnet_b0": tvm.efficientnet_b0,
            "mobilenet_v3_large": tvm.mobilenet_v3_large, "regnet_y_800mf": tvm.regnet_y_800mf,
            "densenet121": tvm.densenet121}[name](weights=None)


# name: (constructor, input shape, {input dim index: symbolic name}, dims to compile with)
MODELS = {
    "mlp": (Mlp, (64, 784), {0: "batch"}, {"batch": 64}),
    "cnn_small": (SmallCnn, (1, 3, 32, 32), {}, {}),
    "resnet18": (lambda: torchvision_model("resnet18"), (1, 3, 224, 224), {}, {}),
    "mobilenet_v2": (lambda: torchvision_model("mobilenet_v2"), (1, 3, 224, 224), {}, {}),
    "squeezenet": (lambda: torchvision_model("squeezenet"), (1, 3, 224, 224), {}, {}),
    "encoder": (Encoder, (1, 128, 256), {}, {}),
}
# Issue 20 §3: torchvision blocks beyond the benchmark set (not exported by default).
TORCHVISION_EXTRA = ("efficientnet_b0", "mobilenet_v3_large", "regnet_y_800mf", "densenet121")
for _name in TORCHVISION_EXTRA:
    MODELS[_name] = ((lambda n=_name: torchvision_model(n)), (1, 3, 224, 224), {}, {})
# Extra saved inputs for a model already exported: name: (model, input shape, dims)
VARIANTS = {"mlp_b1": ("mlp", (1, 784), {"batch": 1})}


def export(name, out, opset, manifest):
    ctor, shape, dynamic, dims = MODELS[name]
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = ctor()
    randomize_batch_norms(model, gen)
    model.eval()
    x = torch.randn(*shape, generator=gen)
    onnx_path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        y = model(x)
    # Exported with gradients enabled: under no_grad, PyTorch 1.13's TransformerEncoderLayer takes
    # its fused fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(model, (x,), onnx_path, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dynamic, "y": {0: "batch"}} if dynamic else None,
                      do_constant_folding=True)
    np.save(os.path.join(out, name + ".x.npy"), x.numpy())
    np.save(os.path.join(out, name + ".y.npy"), y.numpy())
    manifest[name] = {"onnx": name + ".onnx", "input": name + ".x.npy", "output": name + ".y.npy",
                      "dims": dims, "opset": opset}
    for vname, (base, vshape, vdims) in VARIANTS.items():
        if base != name:
            continue
        vx = torch.randn(*vshape, generator=gen)
        with torch.no_grad():
            vy = model(vx)
        np.save(os.path.join(out, vname + ".x.npy"), vx.numpy())
        np.save(os.path.join(out, vname + ".y.npy"), vy.numpy())
        manifest[vname] = {"onnx": name + ".onnx", "input": vname + ".x.npy", "output": vname + ".y.npy",
                           "dims": vdims, "opset": opset}
    print("exported %s: %s, input %s, output %s" % (name, onnx_path, list(shape), list(y.shape)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="build/onnx-models")
    ap.add_argument("--models", default=",".join(m for m in MODELS if m not in TORCHVISION_EXTRA))
    ap.add_argument("--opset", type=int, default=17, choices=range(13, 18))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    manifest_path = os.path.join(a.out, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    torch.set_num_threads(1)  # deterministic reductions for the reference outputs
    names = a.models.split(",")
    if names == ["torchvision"]:
        names = list(TORCHVISION_EXTRA)
    for name in names:
        if name not in MODELS:
            sys.exit("unknown model %r (known: %s)" % (name, ", ".join(MODELS)))
        export(name, a.out, a.opset, manifest)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
