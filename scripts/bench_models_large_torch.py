#!/usr/bin/env python3
"""PyTorch peers of grafo's W10 (ResNet-18 inference) and W11 (GPT-2 stack) workloads.

Times PyTorch eager and `torch.compile` (inference, `torch.no_grad`) on the shapes of
`benches/models_large.rs`: ResNet-18 on batches of 1 and 8 images of 224x224x3 (NCHW here,
NHWC in grafo; batch norm not folded on either side), and the 12-block GPT-2-small-shaped
stack on batch 1 of 128 tokens. The models are `scripts/export_torch_models.py`'s (the same
modules and seeded weights grafo's examples load). Prints one markdown row per workload and
peer: median of the timed calls, min-max, and the first call separately.

    /work/peers-venv/bin/python scripts/bench_models_large_torch.py [--runs 15] [--threads 2]
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch_models as models  # noqa: E402


def time_calls(fn, x, runs, min_time):
    """First call, then 2 warm-up calls, then `runs` timed calls (more while under min_time)."""
    with torch.no_grad():
        t0 = time.perf_counter()
        fn(x)
        first = time.perf_counter() - t0
        for _ in range(2):
            fn(x)
        times = []
        start = time.perf_counter()
        while len(times) < runs or time.perf_counter() - start < min_time:
            t0 = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times), min(times), max(times), len(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--min-time", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    resnet_cfg, gpt_cfg = models.RESNET["full"], models.GPT2["full"]
    resnet = models.build_resnet(resnet_cfg)
    gpt = models.build_gpt2(gpt_cfg)
    cases = [
        ("W10", "resnet18, batch 1", resnet, models.resnet_input(resnet_cfg, 1)),
        ("W10", "resnet18, batch 8", resnet, models.resnet_input(resnet_cfg, 8)),
        ("W11", "gpt2_stack, batch 1, 128 tokens", gpt, models.gpt2_input(gpt_cfg, 1)),
    ]
    rows = []
    for wid, name, model, x in cases:
        # One compiled module per input shape, so each case's first call includes its compile.
        for peer, fn in [("torch eager", model), ("torch.compile", torch.compile(model))]:
            first, med, lo, hi, n = time_calls(fn, x, args.runs, args.min_time)
            rows.append(dict(workload=wid, name=name, peer=peer, first_ms=first * 1e3,
                             median_ms=med * 1e3, min_ms=lo * 1e3, max_ms=hi * 1e3, runs=n))
            print(f"  {wid} {name} {peer}: {med * 1e3:.1f} ms", file=sys.stderr, flush=True)
    print(f"torch {torch.__version__}, {args.threads} threads, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| workload | peer | median ms | min-max ms | runs | first call ms |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} {r['name']} | {r['peer']} | {r['median_ms']:.2f} | "
              f"{r['min_ms']:.2f}-{r['max_ms']:.2f} | {r['runs']} | {r['first_ms']:.0f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
