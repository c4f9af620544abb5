#!/usr/bin/env python3
"""Figures and charts for BENCHMARKS.md from one `cargo bench -p grafo-benches --bench workloads` run and one peers run.

Reads criterion's medians (`<target>/criterion/<group>/<arm>/new/estimates.json`) and the
markdown tables printed by `../shared/peers/bench_peers.py` (its stdout, or its results.md),
prints the "What to report" table as markdown, and writes one SVG bar chart per workload
into docs/bench/ (grafo compiled, session, eager, and each peer; log-scale time axis).
Plain Python 3, no packages needed.

    python3 scripts/plot_bench.py --criterion target/criterion --peers peers_run.txt --out docs/bench
"""

import argparse
import html
import json
import math
import os
import re
import sys

# (chart file, title, criterion group, peers row label prefix, unit)
WORKLOADS = [
    ("w1_gelu", "W1 gelu f32[4194304]", "W1_gelu", "W1 gelu f32[4194304]", "ms"),
    ("w2_mlp", "W2 mlp 256x784 -> 512 -> 10, softmax", "W2_mlp", "W2 mlp", "ms"),
    ("w3_convnet_t_inf", "W3 seed_convnet 1x512x512x3, t=+inf (2nd conv runs)",
     "W3_convnet_t_inf", "W3 seed_convnet t=+inf", "ms"),
    ("w3_convnet_t_0", "W3 seed_convnet 1x512x512x3, t=0 (2nd conv skipped)",
     "W3_convnet_t_0", "W3 seed_convnet t=0", "ms"),
    ("w4_layernorm", "W4 layernorm 4096x1024", "W4_layernorm", "W4 layernorm 4096x1024", "ms"),
    ("w5_add", "W5 a+b on i32 scalars, per call", "W5_add_i32", "a+b", "us"),
    ("w5_two_fetches", "W5 (x*y, y/x) on f32 scalars, per call", "W5_two_fetches_f32",
     "(x*y, y/x)", "us"),
]
ARMS = ["compiled", "session", "eager", "copy", "ndarray"]


def criterion_medians(root):
    """{group: {arm: median seconds}} from criterion's estimates.json files."""
    out = {}
    for group in sorted(os.listdir(root)):
        for arm in ARMS:
            p = os.path.join(root, group, arm, "new", "estimates.json")
            if os.path.exists(p):
                with open(p) as f:
                    out.setdefault(group, {})[arm] = json.load(f)["median"]["point_estimate"] * 1e-9
    return out


def md_tables(text):
    """[(heading, header cells, rows of cells)] for every markdown table after a ### heading."""
    tables, heading, header, rows = [], None, None, []
    for line in text.splitlines() + [""]:
        if line.startswith("###"):
            heading = line.strip("# ").strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(set(c) <= set("-:") for c in cells):
                rows.append(cells)
        elif header is not None:
            tables.append((heading, header, rows))
            header, rows = None, []
    return tables


def num(cell):
    try:
        return float(cell)
    except ValueError:
        return None


def peer_figures(path):
    """{row label prefix: {peer: value}}: ms for W1–W4, µs per call for W5."""
    with open(path) as f:
        tables = md_tables(f.read())
    out = {}
    for heading, header, rows in tables:
        h = (heading or "").lower()
        if h.startswith("median wall time"):
            w4 = w1 = None
            for r in rows:
                vals = {header[i]: num(r[i]) for i in range(1, len(r)) if num(r[i]) is not None}
                if r[0].startswith("W4 layernorm 4096"):
                    w4 = out[r[0]] = vals
                elif r[0].startswith("W1 gelu f32"):
                    w1 = out[r[0]] = vals
                elif "layer_norm" in r[0] and w4 is not None:
                    # extra row: torch's builtin F.layer_norm (the goal column's best peer)
                    w4.update({f"{k} F.layer_norm": v for k, v in vals.items()})
                elif "x*x*x" in r[0] and w1 is not None:
                    # extra row: the same gelu written with x*x*x (as grafo's bench writes it)
                    w1.update({f"{k} (x*x*x)": v for k, v in vals.items()})
                else:
                    out[r[0]] = vals
        elif h.startswith("w5"):
            for r in rows:
                out.setdefault("a+b", {})[r[0]] = num(r[1])
                out.setdefault("(x*y, y/x)", {})[r[0]] = num(r[2])
    return out


def find_peer_row(peers, prefix):
    for label, vals in peers.items():
        if label.startswith(prefix):
            return vals
    return {}


def fmt(v):
    if v is None:
        return "–"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def svg_chart(title, bars, unit, path):
    """Horizontal bars on a log axis; bars = [(label, value, kind)]."""
    colours = {"grafo": "#d9480f", "grafo-eager": "#f59f00", "ref": "#868e96", "peer": "#1c7ed6"}
    bars = [b for b in bars if b[1] and b[1] > 0]
    lo = 10 ** math.floor(math.log10(min(v for _, v, _ in bars)))
    hi = 10 ** math.ceil(math.log10(max(v for _, v, _ in bars)))
    if hi / lo < 100:
        hi = lo * 100
    left, width, bar_h, gap, top = 250, 460, 18, 6, 44
    height = top + len(bars) * (bar_h + gap) + 40
    x = lambda v: left + width * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="100%" height="100%" fill="white"/>',
         f'<text x="10" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
         f'<text x="10" y="36" fill="#555">median time per call, {unit.replace("us", "µs")}, log scale '
         f'(lower is better)</text>']
    d = lo
    while d <= hi * 1.0001:
        s.append(f'<line x1="{x(d):.1f}" y1="{top - 4}" x2="{x(d):.1f}" y2="{height - 30}" stroke="#ddd"/>')
        s.append(f'<text x="{x(d):.1f}" y="{height - 16}" text-anchor="middle" fill="#555">{fmt(d)}</text>')
        d *= 10
    for i, (label, v, kind) in enumerate(bars):
        y = top + i * (bar_h + gap)
        s.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{html.escape(label)}</text>')
        s.append(f'<rect x="{left}" y="{y}" width="{max(x(v) - left, 1):.1f}" height="{bar_h}" '
                 f'fill="{colours[kind]}"/>')
        s.append(f'<text x="{x(v) + 4:.1f}" y="{y + 13}">{fmt(v)}</text>')
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--criterion", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion"))
    ap.add_argument("--peers", default=os.path.join("..", "shared", "peers", "results.md"),
                    help="bench_peers.py stdout or results.md")
    ap.add_argument("--out", default=os.path.join("docs", "bench"))
    args = ap.parse_args()
    ours = criterion_medians(args.criterion)
    peers = peer_figures(args.peers)
    os.makedirs(args.out, exist_ok=True)

    print("| workload | compiled | session | eager | eager/compiled | copy | compiled/copy | best peer |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, title, group, prefix, unit in WORKLOADS:
        g = ours.get(group, {})
        scale = 1e3 if unit == "ms" else 1e6
        v = {k: t * scale for k, t in g.items()}
        p = {k: val for k, val in find_peer_row(peers, prefix).items() if val is not None}
        best = min(p.items(), key=lambda kv: kv[1]) if p else None
        ratio = v["eager"] / v["compiled"] if "eager" in v and "compiled" in v else None
        copy_ratio = v["compiled"] / v["copy"] if "copy" in v and "compiled" in v else None
        print(f"| {title} ({unit}) | {fmt(v.get('compiled'))} | {fmt(v.get('session'))} | "
              f"{fmt(v.get('eager'))} | {fmt(ratio)}x | {fmt(v.get('copy'))} | "
              f"{fmt(copy_ratio) + 'x' if copy_ratio else '–'} | "
              f"{best[0] + ' ' + fmt(best[1]) if best else '–'} |")
        bars = [("grafo compiled", v.get("compiled"), "grafo"),
                ("grafo session", v.get("session"), "grafo"),
                ("grafo eager", v.get("eager"), "grafo-eager")]
        if "copy" in v:
            bars.append(("parallel copy (same bytes)", v["copy"], "ref"))
        if "ndarray" in v:
            bars.append(("ndarray by hand", v["ndarray"], "ref"))
        bars += [(k, val, "peer") for k, val in p.items()]
        if any(b[1] for b in bars):
            svg_chart(title, bars, unit, os.path.join(args.out, name + ".svg"))
    print(f"\ncharts in {args.out}/", file=sys.stderr)


if __name__ == "__main__":
    main()
