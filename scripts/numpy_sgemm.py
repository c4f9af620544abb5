#!/usr/bin/env python3
"""NumPy's sgemm on the shapes of benches/linalg.rs: sgemm 256-2048, W2's two products, W3's convs as GEMMs.

Prints one markdown row per shape: median of the timed calls (after 3 warm-up calls, at
least 10 calls and 1 s), GFLOP/s = 2*m*k*n / time, and which BLAS kernel numpy runs
(threadpoolctl). Run it with the OpenBLAS tuning variables unset (see BENCHMARKS.md):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /work/wt/peers-venv/bin/python scripts/numpy_sgemm.py
"""

import os
import statistics
import time

import numpy as np

SHAPES = [
    ("sgemm 256", 256, 256, 256),
    ("sgemm 512", 512, 512, 512),
    ("sgemm 1024", 1024, 1024, 1024),
    ("sgemm 2048", 2048, 2048, 2048),
    ("W2 256x784x512", 256, 784, 512),
    ("W2 256x512x10", 256, 512, 10),
    ("W3 conv1 as GEMM 262144x27x16", 512 * 512, 27, 16),
    ("W3 conv2 as GEMM 262144x144x16", 512 * 512, 144, 16),
]


def main():
    try:
        from threadpoolctl import threadpool_info

        blas = [
            f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} threads={i.get('num_threads')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
    except ImportError:
        blas = ["threadpoolctl not installed"]
    print(f"numpy {np.__version__}; BLAS: {'; '.join(blas)}")
    print(
        "env: "
        + ", ".join(f"{v}={os.environ.get(v, '(unset)')}" for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS"))
    )
    print()
    print("| shape | numpy median | GFLOP/s |")
    print("|---|---:|---:|")
    rng = np.random.default_rng(0)
    for name, m, k, n in SHAPES:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        out = np.empty((m, n), dtype=np.float32)
        for _ in range(3):
            np.matmul(a, b, out=out)
        times = []
        start = time.perf_counter()
        while len(times) < 10 or time.perf_counter() - start < 1.0:
            t = time.perf_counter()
            np.matmul(a, b, out=out)
            times.append(time.perf_counter() - t)
            if len(times) >= 1000:
                break
        med = statistics.median(times)
        print(f"| {name} | {med * 1e3:.3f} ms | {2 * m * k * n / med / 1e9:.1f} |")


if __name__ == "__main__":
    main()
