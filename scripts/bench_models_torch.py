#!/usr/bin/env python3
"""PyTorch peers of grafo's W6 (transformer encoder block) and W7 (MNIST CNN) workloads.

Times PyTorch eager and `torch.compile` on the same shapes and seeded inputs as
`benches/workloads.rs` (groups W6 and W7), and prints one markdown table row per
workload and peer (median of the timed calls, first call separately).

Usage (a venv with torch and numpy; see ../shared/peers/README.md for installing torch):
    python scripts/bench_models_torch.py [--runs 20] [--threads 2] [--json out.json]
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

# W6: one post-LN transformer encoder block (batch B, sequence S, model D, H heads, FFN F).
W6 = dict(B=8, S=64, D=256, H=4, F=1024)
# W7: the TF tutorial's MNIST CNN on a batch of 64 (NHWC in grafo, NCHW here).
W7 = dict(B=64)


def uniform(rng, shape, scale):
    return torch.from_numpy((rng.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32))


def w6_inputs():
    rng = np.random.default_rng(6)
    b, s, d, f = W6["B"], W6["S"], W6["D"], W6["F"]
    sd = 1.0 / np.sqrt(d)
    return dict(
        x=uniform(rng, (b, s, d), 1.0),
        wq=uniform(rng, (d, d), sd), wk=uniform(rng, (d, d), sd),
        wv=uniform(rng, (d, d), sd), wo=uniform(rng, (d, d), sd),
        g1=torch.ones(d), b1=torch.zeros(d),
        w1=uniform(rng, (d, f), sd), c1=torch.zeros(f),
        w2=uniform(rng, (f, d), 1.0 / np.sqrt(f)), c2=torch.zeros(d),
        g2=torch.ones(d), b2=torch.zeros(d),
    )


def w6_block(x, wq, wk, wv, wo, g1, b1, w1, c1, w2, c2, g2, b2):
    bsz, s, d = x.shape
    h, dh = W6["H"], W6["D"] // W6["H"]
    q = (x @ wq).reshape(bsz, s, h, dh).transpose(1, 2)
    k = (x @ wk).reshape(bsz, s, h, dh).transpose(1, 2)
    v = (x @ wv).reshape(bsz, s, h, dh).transpose(1, 2)
    att = torch.softmax((q @ k.transpose(-1, -2)) * (1.0 / dh ** 0.5), dim=-1)
    ctx = (att @ v).transpose(1, 2).reshape(bsz, s, d)
    y = F.layer_norm(x + ctx @ wo, (d,), g1, b1, eps=1e-5)
    ff = F.gelu(y @ w1 + c1) @ w2 + c2
    return F.layer_norm(y + ff, (d,), g2, b2, eps=1e-5)


def w7_inputs():
    rng = np.random.default_rng(7)
    b = W7["B"]
    return dict(
        x=uniform(rng, (b, 1, 28, 28), 1.0),
        k1=uniform(rng, (32, 1, 3, 3), 1.0 / 3.0), c1=uniform(rng, (32,), 0.1),
        k2=uniform(rng, (64, 32, 3, 3), 1.0 / np.sqrt(288)), c2=uniform(rng, (64,), 0.1),
        w=uniform(rng, (1600, 10), 1.0 / 40.0), c=uniform(rng, (10,), 0.1),
    )


def w7_cnn(x, k1, c1, k2, c2, w, c):
    y = F.max_pool2d(F.relu(F.conv2d(x, k1, c1)), 2)
    y = F.max_pool2d(F.relu(F.conv2d(y, k2, c2)), 2)
    # Flatten in NHWC order, as grafo's reshape of an NHWC tensor does.
    y = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1)
    return torch.softmax(y @ w + c, dim=-1)


def time_calls(fn, args, runs):
    with torch.no_grad():
        t0 = time.perf_counter()
        fn(**args)
        first = time.perf_counter() - t0
        for _ in range(3):
            fn(**args)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(**args)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for wid, name, fn, inputs in [
        ("W6", "transformer_block", w6_block, w6_inputs()),
        ("W7", "mnist_cnn", w7_cnn, w7_inputs()),
    ]:
        for peer, f in [("torch eager", fn), ("torch.compile", torch.compile(fn))]:
            first, med, lo, hi = time_calls(f, inputs, args.runs)
            rows.append(dict(workload=wid, name=name, peer=peer, first_ms=first * 1e3,
                             median_ms=med * 1e3, min_ms=lo * 1e3, max_ms=hi * 1e3))
    print(f"torch {torch.__version__}, {args.threads} threads, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| workload | peer | median ms | min-max ms | first call ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} {r['name']} | {r['peer']} | {r['median_ms']:.3f} | "
              f"{r['min_ms']:.3f}-{r['max_ms']:.3f} | {r['first_ms']:.1f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
