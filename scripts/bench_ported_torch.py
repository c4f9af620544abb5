#!/usr/bin/env python3
"""PyTorch peers of benches/ported.rs: a MobileNetV2 inverted-residual block and a gather + mean text classifier.

The models are written as a PyTorch user writes them (nn.Module, NCHW, BatchNorm2d in eval
mode, nn.Embedding); the shapes are benches/ported.rs's (docs/bench/ported.md). Each is
timed in eager mode, eager with channels_last memory format (the blocks only) and under
`torch.compile`; one markdown table row per model and peer (median of the timed calls,
first call separately).

PyTorch's stride-2 block pads 1 on every side (`padding=1`) where grafo's TF-style SAME pads
0 before and 1 after: the same amount of work, not the same numbers (docs/LANGUAGE-NOTES.md).

Usage (a venv with torch and numpy):
    python scripts/bench_ported_torch.py [--runs 30] [--threads 2] [--json out.json]
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The shapes of tests/common/ported.rs.
SIDE, CHANNELS, EXPANDED, CHANNELS_OUT_S2 = 56, 24, 144, 32
VOCAB, EMBED, TOKENS, HIDDEN, CLASSES, TEXT_BATCH = 20000, 128, 128, 64, 4, 32


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand + BN + ReLU6, 3x3 depthwise + BN + ReLU6, 1x1 project + BN."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, EXPANDED, 1, bias=False),
            nn.BatchNorm2d(EXPANDED),
            nn.ReLU6(inplace=True),
            nn.Conv2d(EXPANDED, EXPANDED, 3, stride, 1, groups=EXPANDED, bias=False),
            nn.BatchNorm2d(EXPANDED),
            nn.ReLU6(inplace=True),
            nn.Conv2d(EXPANDED, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class TextClassifier(nn.Module):
    """Embedding rows by token id, their mean over the tokens, dense + ReLU, dense."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMBED)
        self.hidden = nn.Linear(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, CLASSES)

    def forward(self, ids):
        return self.out(F.relu(self.hidden(self.embedding(ids).mean(dim=1))))


def randomise_batch_norms(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.4 + 0.8)
            m.bias.data.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)


def time_calls(fn, arg, runs):
    with torch.no_grad():
        t0 = time.perf_counter()
        fn(arg)
        first = time.perf_counter() - t0
        for _ in range(3):
            fn(arg)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(arg)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times), min(times), max(times)


def cases():
    gen = torch.Generator().manual_seed(31)
    for stride, cout in [(1, CHANNELS), (2, CHANNELS_OUT_S2)]:
        for batch in [1, 8]:
            model = InvertedResidual(CHANNELS, cout, stride).eval()
            with torch.no_grad():
                randomise_batch_norms(model, gen)
            x = torch.rand(batch, CHANNELS, SIDE, SIDE, generator=gen) * 2 - 1
            name = f"mobilenetv2_block_s{stride}_b{batch}"
            last = model.to(memory_format=torch.channels_last)
            yield name, [
                ("torch eager", model_copy(model, cout, stride), x),
                ("torch eager channels_last", last, x.contiguous(memory_format=torch.channels_last)),
                ("torch.compile", torch.compile(model_copy(model, cout, stride)), x),
            ]
    model = TextClassifier().eval()
    ids = torch.randint(0, VOCAB, (TEXT_BATCH, TOKENS), generator=gen, dtype=torch.int64)
    yield f"text_classifier_b{TEXT_BATCH}", [
        ("torch eager", model, ids),
        ("torch.compile", torch.compile(model), ids),
    ]


def model_copy(model, cout, stride):
    """A contiguous (NCHW) copy of `model`, with its weights."""
    fresh = InvertedResidual(CHANNELS, cout, stride).eval()
    fresh.load_state_dict(model.state_dict())
    return fresh.to(memory_format=torch.contiguous_format)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name, peers in cases():
        for peer, fn, arg in peers:
            first, med, lo, hi = time_calls(fn, arg, args.runs)
            rows.append(dict(model=name, peer=peer, first_ms=first * 1e3,
                             median_ms=med * 1e3, min_ms=lo * 1e3, max_ms=hi * 1e3))
    print(f"torch {torch.__version__}, {args.threads} threads, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| model | peer | median ms | min-max ms | first call ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['peer']} | {r['median_ms']:.3f} | "
              f"{r['min_ms']:.3f}-{r['max_ms']:.3f} | {r['first_ms']:.1f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
