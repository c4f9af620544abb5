//! Counting-allocator proofs of the buffer plan: W1 allocates exactly its output, W4 its output plus two row-statistics vectors.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
#[path = "common/workloads.rs"]
mod workloads;

use counting_alloc::{allocations, serial};
use grafo::prelude::*;
use workloads::{gelu, layernorm};

#[test]
fn w1_allocates_exactly_its_output() {
    let _guard = serial();
    let n = 1 << 20;
    let x = Array1::from_iter((0..n).map(|i| (i % 1000) as f32 / 500.0 - 1.0));
    let _ = gelu(&x).unwrap();
    let (c, y) = allocations(|| gelu(&x).unwrap());
    assert_eq!(y.len(), n);
    assert_eq!(c.big, 1, "one buffer: the output");
    assert_eq!(c.big_bytes, n * 4);
    assert!(
        c.all_bytes - c.big_bytes < 4096,
        "bookkeeping only, found {c:?}"
    );
    // The eager path materialises every intermediate.
    let (eager, _) = allocations(|| gelu::eager(&x).unwrap());
    assert!(
        eager.big >= 8,
        "eager materialises its intermediates, found {eager:?}"
    );
}

#[test]
fn w4_allocates_its_output_and_two_row_vectors() {
    let _guard = serial();
    let rows = 2048;
    let x = Array2::from_shape_fn((rows, 1024), |(i, j)| ((i * 7 + j * 3) % 101) as f32 / 50.0);
    let g = Array1::from_elem(1024, 1.5f32);
    let b = Array1::from_elem(1024, 0.25f32);
    // The first call on a thread plans its buffers: the output and the mean and variance rows.
    let (first, y) = std::thread::scope(|s| {
        s.spawn(|| allocations(|| layernorm(&x, &g, &b).unwrap()))
            .join()
            .expect("the first call runs")
    });
    assert_eq!(y.shape(), &[rows, 1024]);
    assert_eq!(
        first.big, 3,
        "the output and the mean and variance rows: {first:?}"
    );
    assert_eq!(first.big_bytes, rows * 1024 * 4 + 2 * rows * 4);
    // Later calls on a thread reuse the row vectors: only the output is new.
    let _ = layernorm(&x, &g, &b).unwrap();
    let (steady, _) = allocations(|| layernorm(&x, &g, &b).unwrap());
    assert_eq!(
        (steady.big, steady.big_bytes),
        (1, rows * 1024 * 4),
        "{steady:?}"
    );
}
