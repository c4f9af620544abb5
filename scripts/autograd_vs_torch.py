"""PyTorch autograd's gradients of four grafo models, for tests/autograd_vs_torch.rs.

The models are written in plain torch exactly as the `#[graph]` functions of that test
(copies of W8's MLP at smaller sizes, W9's CNN, W6's transformer block at smaller sizes and the
GRU example): seeded inputs and weights (float32), the loss, and its gradients computed twice
from the same float32 values, in float32 (what grafo is compared with) and in float64 (the
reference both are measured against). Each model's file in tests/data/autograd/ holds:

  in.NAME      the inputs (float32; labels int32), in grafo's layouts (NHWC, HWIO)
  loss32, loss64, grad32.NAME, grad64.NAME   for each differentiated input NAME
  steps        (the GRU) the number of steps its early-stop cond let run

Layouts: grafo's images are NHWC and filters HWIO; here the leaves are created in those
layouts and permuted to NCHW / OIHW inside the model, so that autograd's gradients come back
in grafo's layouts. The GRU is TF's GRUCell with reset_after=False (reset applied to h before
the recurrent product), written by hand. GELU is the erf form (grafo's `gelu` default);
layer_norm's epsilon is 1e-5 as in the block.

Run from the repository root:  /work/peers-venv/bin/python scripts/autograd_vs_torch.py
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "autograd")


def uniform(rng, shape, scale):
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


# ----- the models, on tensors of either dtype ---------------------------------------------------


def mlp(t):
    h = F.relu(t["x"] @ t["w1"] + t["b1"])
    logits = h @ t["w2"] + t["b2"]
    return F.cross_entropy(logits, t["labels"].long())  # the mean over the batch


def cnn(t):
    def conv_relu_pool(y, k, c):
        y = F.conv2d(y, k.permute(3, 2, 0, 1))  # HWIO -> OIHW, VALID, stride 1
        return F.max_pool2d(F.relu(y + c.view(1, -1, 1, 1)), 2, 2)

    y = conv_relu_pool(t["x"].permute(0, 3, 1, 2), t["k1"], t["c1"])  # NHWC -> NCHW
    y = conv_relu_pool(y, t["k2"], t["c2"])
    flat = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1)  # flattened in NHWC order, as grafo
    logits = flat @ t["w"] + t["c"]
    return F.cross_entropy(logits, t["labels"].long())


SEQ, MODEL, HEADS, FFN = 16, 64, 4, 128
HEAD = MODEL // HEADS


def transformer(t):
    x = t["x"]
    b = x.shape[0]

    def heads(m):
        return (x @ m).reshape(b, SEQ, HEADS, HEAD).transpose(1, 2)

    q, k, v = heads(t["wq"]), heads(t["wk"]), heads(t["wv"])
    scores = (q @ k.transpose(-1, -2)) * (1.0 / HEAD**0.5)
    context = torch.softmax(scores, -1) @ v
    attn = context.transpose(1, 2).reshape(b, SEQ, MODEL) @ t["wo"]
    y = F.layer_norm(x + attn, (MODEL,), t["gamma1"], t["beta1"], eps=1e-5)
    ff = F.gelu(y @ t["w1"] + t["c1"]) @ t["w2"] + t["c2"]  # erf form
    out = F.layer_norm(y + ff, (MODEL,), t["gamma2"], t["beta2"], eps=1e-5)
    return (out * t["r"]).sum()


def gru_cell(x, h, t):
    z = torch.sigmoid(x @ t["wz"] + h @ t["uz"] + t["bz"])
    r = torch.sigmoid(x @ t["wr"] + h @ t["ur"] + t["br"])
    n = torch.tanh(x @ t["wn"] + (r * h) @ t["un"] + t["bn"])
    return (1.0 - z) * n + z * h


def gru_run(t):
    """The 16 steps with the example's early stop; returns the last state and the steps run."""
    h, running, steps = t["h0"], True, 0
    for step in range(16):
        if running:
            nxt = gru_cell(t["x"][:, step, :], h, t)
            running = not bool((nxt - h).abs().max() < t["tol"])
            steps += 1
            h = nxt
    return h, steps


def gru(t):
    h, steps = gru_run(t)
    gru.steps = steps
    return (h * t["r"]).sum()


# ----- seeded inputs ----------------------------------------------------------------------------


def mlp_inputs(rng):
    b, i, hdim, c = 16, 64, 32, 10
    return {
        "x": rng.uniform(0.0, 1.0, size=(b, i)).astype(np.float32),
        "labels": rng.integers(0, c, size=(b,)).astype(np.int32),
        "w1": uniform(rng, (i, hdim), (6.0 / (i + hdim)) ** 0.5),
        "b1": uniform(rng, (hdim,), 0.1),
        "w2": uniform(rng, (hdim, c), (6.0 / (hdim + c)) ** 0.5),
        "b2": uniform(rng, (c,), 0.1),
    }


def cnn_inputs(rng):
    return {
        "x": rng.uniform(0.0, 1.0, size=(2, 28, 28, 1)).astype(np.float32),
        "labels": np.array([3, 7], dtype=np.int32),
        "k1": uniform(rng, (3, 3, 1, 32), (6.0 / (9 + 288)) ** 0.5),
        "c1": uniform(rng, (32,), 0.1),
        "k2": uniform(rng, (3, 3, 32, 64), (6.0 / (288 + 576)) ** 0.5),
        "c2": uniform(rng, (64,), 0.1),
        "w": uniform(rng, (1600, 10), (6.0 / 1610) ** 0.5),
        "c": uniform(rng, (10,), 0.1),
    }


def transformer_inputs(rng):
    s = MODEL**-0.5
    return {
        "x": uniform(rng, (2, SEQ, MODEL), 1.0),
        "wq": uniform(rng, (MODEL, MODEL), s),
        "wk": uniform(rng, (MODEL, MODEL), s),
        "wv": uniform(rng, (MODEL, MODEL), s),
        "wo": uniform(rng, (MODEL, MODEL), s),
        "gamma1": 1.0 + uniform(rng, (MODEL,), 0.1),
        "beta1": uniform(rng, (MODEL,), 0.1),
        "w1": uniform(rng, (MODEL, FFN), s),
        "c1": uniform(rng, (FFN,), 0.1),
        "w2": uniform(rng, (FFN, MODEL), FFN**-0.5),
        "c2": uniform(rng, (MODEL,), 0.1),
        "gamma2": 1.0 + uniform(rng, (MODEL,), 0.1),
        "beta2": uniform(rng, (MODEL,), 0.1),
        "r": uniform(rng, (2, SEQ, MODEL), 1.0),
    }


GRU_B, GRU_I, GRU_H = 4, 8, 32  # the example's sizes


def gru_weights(rng):
    w = {}
    for g in "zrn":
        w["w" + g] = uniform(rng, (GRU_I, GRU_H), 0.3)
        w["u" + g] = uniform(rng, (GRU_H, GRU_H), 0.3)
        w["b" + g] = uniform(rng, (GRU_H,), 0.1)
    return w


def gru_full_inputs(rng):
    t = {"x": uniform(rng, (GRU_B, 16, GRU_I), 1.0), "h0": uniform(rng, (GRU_B, GRU_H), 0.5)}
    t.update(gru_weights(rng))
    t["tol"] = np.array(0.0, dtype=np.float32)
    t["r"] = uniform(rng, (GRU_B, GRU_H), 1.0)
    return t


def gru_stop_inputs(rng):
    # The example's constant input drives the state to a fixed point; tol is put halfway
    # (geometrically) between the state's changes at steps 5 and 6, so the cond stops after 6.
    t = {"x": np.full((GRU_B, 16, GRU_I), 0.5, dtype=np.float32), "h0": uniform(rng, (GRU_B, GRU_H), 0.5)}
    t.update(gru_weights(rng))
    t["r"] = uniform(rng, (GRU_B, GRU_H), 1.0)
    with torch.no_grad():
        tt = {k: torch.tensor(v, dtype=torch.float64) for k, v in t.items()}
        h, changes = tt["h0"], []
        for step in range(6):
            nxt = gru_cell(tt["x"][:, step, :], h, tt)
            changes.append(float((nxt - h).abs().max()))
            h = nxt
    assert all(a > b for a, b in zip(changes, changes[1:])), changes
    t["tol"] = np.array((changes[4] * changes[5]) ** 0.5, dtype=np.float32)
    return t


# model name, the model, its inputs, the inputs it is differentiated with respect to
MODELS = [
    ("mlp", mlp, mlp_inputs, ["w1", "b1", "w2", "b2"]),
    ("cnn", cnn, cnn_inputs, ["x", "k1", "c1", "k2", "c2", "w", "c"]),
    (
        "transformer",
        transformer,
        transformer_inputs,
        ["x", "wq", "wk", "wv", "wo", "gamma1", "beta1", "w1", "c1", "w2", "c2", "gamma2", "beta2"],
    ),
    ("gru_full", gru, gru_full_inputs, ["x", "h0", "wz", "uz", "bz", "wr", "ur", "br", "wn", "un", "bn"]),
    ("gru_stop", gru, gru_stop_inputs, ["x", "h0", "wz", "uz", "bz", "wr", "ur", "br", "wn", "un", "bn"]),
]


def grads(model, inputs, wrt, dtype):
    t = {}
    for k, v in inputs.items():
        if v.dtype == np.int32:
            t[k] = torch.tensor(v)
        else:
            t[k] = torch.tensor(v, dtype=dtype, requires_grad=k in wrt)
    loss = model(t)
    gs = torch.autograd.grad(loss, [t[k] for k in wrt])
    return loss.detach().numpy(), {k: g.numpy() for k, g in zip(wrt, gs)}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, model, make, wrt) in enumerate(MODELS):
        rng = np.random.default_rng(2026 + seed)
        inputs = make(rng)
        loss32, g32 = grads(model, inputs, wrt, torch.float32)
        steps32 = getattr(model, "steps", None)
        loss64, g64 = grads(model, inputs, wrt, torch.float64)
        steps64 = getattr(model, "steps", None)
        assert steps32 == steps64, f"{name}: float32 and float64 ran different steps"
        out = {"in." + k: v.copy(order="C") for k, v in inputs.items()}  # ascontiguousarray makes a 0-d array 1-d
        out["loss32"] = np.asarray(loss32, dtype=np.float32)
        out["loss64"] = np.asarray(loss64, dtype=np.float64)
        for k in wrt:
            out["grad32." + k] = np.ascontiguousarray(g32[k].astype(np.float32))
            out["grad64." + k] = np.ascontiguousarray(g64[k].astype(np.float64))
        if steps32 is not None:
            out["steps"] = np.asarray(float(steps32), dtype=np.float32)
        path = os.path.join(OUT, name + ".safetensors")
        save_file(out, path, metadata={"torch": torch.__version__, "script": "scripts/autograd_vs_torch.py"})
        worst = max(
            float(np.abs(g32[k] - g64[k]).max() / max(np.abs(g64[k]).max(), 1e-30)) for k in wrt
        )
        extra = f", {steps32} steps" if steps32 is not None else ""
        print(
            f"{name}: loss {float(loss64):.6g}{extra}, torch f32 vs f64 worst max|d|/max|g| {worst:.2e},"
            f" {os.path.getsize(path)} bytes"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
