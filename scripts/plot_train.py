#!/usr/bin/env python3
"""Charts of the training steps W8 and W9 for BENCHMARKS.md: grafo's arms against the peers of the same hour.

Reads the text criterion printed for `cargo bench -p grafo-benches --bench train` (its stdout:
the point estimate of each `w8_mlp_train/ARM` and `w9_cnn_train/ARM`) and the markdown table
printed by `../shared/peers/bench_train.py`, and writes one SVG bar chart per workload (log
time axis, the same drawing as `plot_bench.py`). Plain Python 3, no packages needed.

    python3 scripts/plot_train.py --grafo train_bench.txt --peers bench_train.txt --out docs/bench/DIR
"""

import argparse
import os
import re

from plot_bench import svg_chart

UNITS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
# (chart file, title, criterion group, bench_train.py workload)
WORKLOADS = [
    ("w8_mlp_train", "W8: one Adam step of W2's MLP (batch 256)", "w8_mlp_train", "mlp_train"),
    ("w9_cnn_train", "W9: one Adam step of W7's CNN (batch 64)", "w9_cnn_train", "cnn_train"),
]


def grafo_arms(text):
    """{group: {arm: ms}} from criterion's printed `group/arm  time: [lo est hi]` lines."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^(w\d+_\w+)/(\w+)", line)
        if m:
            name = (m.group(1), m.group(2))
        t = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if t and name:
            out.setdefault(name[0], {})[name[1]] = float(t.group(1)) * UNITS[t.group(2)]
            name = None
    return out


def peer_rows(text):
    """{workload: [(peer, ms)]} from bench_train.py's markdown table."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in ("mlp_train", "cnn_train"):
            out.setdefault(cells[0], []).append((cells[1], float(cells[2])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grafo", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    grafo = grafo_arms(open(a.grafo).read())
    peers = peer_rows(open(a.peers).read())
    os.makedirs(a.out, exist_ok=True)
    for file, title, group, workload in WORKLOADS:
        bars = []
        for arm, ms in sorted(grafo.get(group, {}).items(), key=lambda kv: kv[1]):
            bars.append((f"grafo {arm.replace('_', ' ')}", ms, "grafo-eager" if arm == "eager" else "grafo"))
        for peer, ms in sorted(peers.get(workload, []), key=lambda kv: kv[1]):
            bars.append((re.sub(r" \(.*?\)( \+ .*)?$", "", peer), ms, "peer"))
        svg_chart(title, bars, "ms", os.path.join(a.out, file + ".svg"))
        print(f"{file}: " + ", ".join(f"{l} {v:.3g}" for l, v, _ in bars))


if __name__ == "__main__":
    main()
