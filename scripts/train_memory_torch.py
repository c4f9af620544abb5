#!/usr/bin/env python3
"""The memory a PyTorch train step holds, for W8 and W9 (BENCHMARKS.md, "Memory of a train step").

The steps are ../shared/peers/bench_train.py's PyTorch eager ones (same shapes, same Adam,
`zero_grad(set_to_none=True)`), on the CPU. One step runs first, so Adam's state exists, as
in a training loop; the second step is measured twice:

- the peak: torch.profiler with `profile_memory=True` records every allocation and free of
  PyTorch's CPU allocator (the "[memory]" events of its trace, each with the running total
  of the bytes allocated since profiling began); the largest total is the peak of the bytes
  the step adds at once to what it starts with: saved activations, gradients, the
  temporaries of the ops and of Adam.
- the saved tensors: `torch.autograd.graph.saved_tensors_hooks` sees every tensor autograd
  saves for the backward pass; the unique storages that are not parameters or inputs are the
  activations PyTorch keeps, their bytes summed.

What the step starts with is counted apart: the parameters, Adam's `exp_avg` and
`exp_avg_sq` (and its step counters), and the batch (x, labels). grafo's side
(examples/train_memory.rs) counts the same three parts, so "working" memory, what the step
adds, compares like for like.

Usage: /work/peers-venv/bin/python scripts/train_memory_torch.py [--threads 2]
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers"))


def tensor_bytes(t):
    return t.untyped_storage().nbytes()


def measure(workload):
    import torch
    from bench_train import make_inputs, torch_step

    inp = make_inputs(workload)
    step, _ = torch_step(workload, inp, torch.float32, compiled=False)
    step()  # Adam's state now exists.
    # The closure's tensors: its parameters (through the optimizer) and the batch.
    opt = next(c.cell_contents for c in step.__closure__
               if isinstance(c.cell_contents, torch.optim.Optimizer))
    params = [p for g in opt.param_groups for p in g["params"]]
    state = [t for p in params for t in opt.state[p].values() if torch.is_tensor(t)]
    fn_cells = {id(c.cell_contents): c.cell_contents for c in step.__closure__}
    batch = [t for t in fn_cells.values()
             if torch.is_tensor(t) and not t.requires_grad]
    param_bytes = sum(tensor_bytes(p) for p in params)
    state_bytes = sum(tensor_bytes(t) for t in state)
    batch_bytes = sum(tensor_bytes(t) for t in batch)

    # Saved tensors: unique storages autograd keeps that are not parameters or the batch.
    known = {p.untyped_storage().data_ptr() for p in params + batch}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in known:
            saved[ptr] = tensor_bytes(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()

    # The grads of the step before are freed now, as the step's own `zero_grad` would:
    # the step then starts from the parameters, Adam's state and the batch.
    opt.zero_grad(set_to_none=True)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    # Each allocation and free the profiler saw, with the running total of the bytes
    # allocated since it started.
    totals = [e["args"]["Total Allocated"] for e in trace["traceEvents"]
              if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0]
    peak = max(totals, default=0)
    live = totals[-1] if totals else 0
    return {
        "params": param_bytes,
        "adam_state": state_bytes,
        "batch": batch_bytes,
        "saved_activations": sum(saved.values()),
        "step_peak": peak,
        "step_end": live,
    }


def mib(b):
    return f"{b / 2**20:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, CPU, eager, {args.threads} threads")
    print("| workload | parameters | Adam state | batch | saved activations | step peak (working) | total peak |")
    print("|---|---|---|---|---|---|---|")
    for w, name in (("mlp_train", "W8"), ("cnn_train", "W9")):
        m = measure(w)
        total = m["params"] + m["adam_state"] + m["batch"] + m["step_peak"]
        print(f"| {name} | {mib(m['params'])} | {mib(m['adam_state'])} | {mib(m['batch'])} | "
              f"{mib(m['saved_activations'])} | {mib(m['step_peak'])} | {mib(total)} |")
    print("MiB. step peak: the largest rise of PyTorch's CPU allocator over the bytes held when "
          "the step starts (profiler memory events).")


if __name__ == "__main__":
    main()
