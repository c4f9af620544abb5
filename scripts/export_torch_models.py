#!/usr/bin/env python3
"""Exports ResNet-18 and a GPT-2-small-shaped decoder from PyTorch for grafo's examples.

Plain torch (no torchvision): the modules below are written out with torchvision's and
nanoGPT's module names, so their state dicts carry the names a real checkpoint has. Each
model gets seeded random weights (batch norms' running statistics, scales and offsets drawn
too, so no norm is the identity), and two safetensors files are written with
safetensors' PyTorch writer:

  NAME.safetensors      the state dict as PyTorch has it (OIHW kernels, Linear [out, in])
  NAME_io.safetensors   "input" and "output": an input and PyTorch's float32 output

    /work/peers-venv/bin/python scripts/export_torch_models.py            # models/ (git-ignored)
    /work/peers-venv/bin/python scripts/export_torch_models.py --small    # tests/data/models/

Full size: resnet18 (224x224 RGB, 1000 classes, input batch 2, NCHW) and gpt2 (12 blocks,
d 768, 12 heads, 128 tokens, input batch 1), read by examples/resnet18.rs and
examples/gpt2.rs. --small: the same code at a tiny configuration (ResNet widths 4-32 on
36x44 images and 10 classes; GPT-2 with 2 blocks, d 32, 4 heads, 16 tokens; batch 2), whose
files are checked in for tests/models_small.rs.

The GPT-2 stack takes token embeddings (what `wte(ids)` gives) as its input, adds the
learned position embeddings `wpe`, and returns the hidden states after the final layer norm
`ln_f`: no token lookup and no language-model head. Its GELU is the tanh approximation, as
GPT-2's.
"""

import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The configurations. The Rust side declares the same numbers as consts of its #[graph] mod.
RESNET = {
    "full": dict(widths=(64, 128, 256, 512), classes=1000, image=(224, 224), batch=2),
    "small": dict(widths=(4, 8, 16, 32), classes=10, image=(36, 44), batch=2),
}
GPT2 = {
    "full": dict(layers=12, d=768, heads=12, tokens=128, positions=1024, batch=1),
    "small": dict(layers=2, d=32, heads=4, tokens=16, positions=32, batch=2),
}


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: two 3x3 convolutions, a 1x1 shortcut when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(y + shortcut)


class ResNet18(nn.Module):
    """torchvision's resnet18 with its names (conv1, bn1, layer1..4, fc)."""

    def __init__(self, widths, classes):
        super().__init__()
        c1, c2, c3, c4 = widths
        self.conv1 = nn.Conv2d(3, c1, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c1)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(c1, c1, 1), BasicBlock(c1, c1, 1))
        self.layer2 = nn.Sequential(BasicBlock(c1, c2, 2), BasicBlock(c2, c2, 1))
        self.layer3 = nn.Sequential(BasicBlock(c2, c3, 2), BasicBlock(c3, c3, 1))
        self.layer4 = nn.Sequential(BasicBlock(c3, c4, 2), BasicBlock(c4, c4, 1))
        self.fc = nn.Linear(c4, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: one Linear for q, k and v, a causal mask of -inf."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        weights = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return self.c_proj((weights @ v).transpose(1, 2).contiguous().view(b, t, d))


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """GPT-2's pre-LN block."""

    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = Mlp(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2Stack(nn.Module):
    """GPT-2's transformer from token embeddings to the final layer norm (nanoGPT's names
    without the `transformer.` prefix: wpe, h.N..., ln_f)."""

    def __init__(self, layers, d, heads, positions):
        super().__init__()
        self.wpe = nn.Embedding(positions, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, x):
        x = x + self.wpe.weight[: x.shape[1]]
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


def build_resnet(cfg, seed=0):
    """ResNet-18 with torchvision's initialisation and random batch-norm statistics."""
    torch.manual_seed(seed)
    model = ResNet18(cfg["widths"], cfg["classes"])
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.0)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.2)
                m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def build_gpt2(cfg, seed=0):
    """GPT-2's initialisation (normal 0.02, wpe 0.01), with random biases and norm
    parameters as a trained model has."""
    torch.manual_seed(seed)
    model = Gpt2Stack(cfg["layers"], cfg["d"], cfg["heads"], cfg["positions"])
    with torch.no_grad():
        for name, t in model.named_parameters():
            if name == "wpe.weight":
                t.normal_(0.0, 0.01)
            elif "ln_" in name and name.endswith("weight"):
                t.normal_(1.0, 0.1)
            elif "ln_" in name:
                t.normal_(0.0, 0.1)
            else:
                t.normal_(0.0, 0.02)
    return model.eval()


def resnet_input(cfg, batch, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, *cfg["image"], generator=g)


def gpt2_input(cfg, batch, seed=1):
    g = torch.Generator().manual_seed(seed)
    return 0.5 * torch.randn(batch, cfg["tokens"], cfg["d"], generator=g)


def export(name, model, x, out_dir):
    with torch.no_grad():
        y = model(x)
    weights = os.path.join(out_dir, f"{name}.safetensors")
    io = os.path.join(out_dir, f"{name}_io.safetensors")
    save_file(model.state_dict(), weights)
    save_file({"input": x.contiguous(), "output": y.float().contiguous()}, io)
    size = os.path.getsize(weights) + os.path.getsize(io)
    print(
        f"{name}: {len(model.state_dict())} tensors, input {tuple(x.shape)}, "
        f"output {tuple(y.shape)} -> {weights}, {io} ({size / 1e6:.2f} MB)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the tiny configuration")
    parser.add_argument("--out", help="the folder (default models/, or tests/data/models/)")
    args = parser.parse_args()
    size = "small" if args.small else "full"
    default = os.path.join("tests", "data", "models") if args.small else "models"
    out_dir = args.out or os.path.join(ROOT, default)
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    suffix = "_small" if args.small else ""
    r, g = RESNET[size], GPT2[size]
    export(f"resnet18{suffix}", build_resnet(r), resnet_input(r, r["batch"]), out_dir)
    export(f"gpt2{suffix}", build_gpt2(g), gpt2_input(g, g["batch"]), out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
