//! Counting-allocator proof that `matmul_into` allocates nothing in steady state: after one
//! warm-up call, W2's two products (`[256, 784] x [784, 512]` and `[256, 512] x [512, 10]`,
//! f32 and f64) and W11's `[128, 768] x [768, 768]` (split into column panels, its `b`
//! prefetched) run inside a 2-thread rayon pool without a single heap allocation, even when
//! the warm-up call ran on one worker alone (as on a loaded machine) and the other meets its
//! first block in steady state. The counting runs on a worker of the pool: `install` from
//! outside would push on rayon's global queue, which allocates a block every 63 pushes.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, serial, with_one_worker, BIG};
use graph_runtime::matmul::{matmul_into, GemmElement, MatmulDims};

/// One product: its sizes, `a`, `b` and the output.
type Op<T> = (MatmulDims, Vec<T>, Vec<T>, Vec<T>);

/// W2's products, `x @ w1` and `h @ w2`, and W11's attention output projection.
const SHAPES: [(usize, usize, usize); 3] = [(256, 784, 512), (256, 512, 10), (128, 768, 768)];

fn values<T: GemmElement>(len: usize, seed: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_f64(((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0))
        .collect()
}

/// Warm-up, then `rounds` more calls of both products under the counter, with an epilogue
/// (a ReLU, as in W2) so the fused path is the one measured.
fn check_steady_state<T: GemmElement>() {
    let _serial = serial();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut ops: Vec<Op<T>> = SHAPES
        .iter()
        .map(|&(m, k, n)| {
            let a = values::<T>(m * k, 1);
            let b = values::<T>(k * n, 2);
            let out = vec![T::ZERO; m * n];
            (MatmulDims::single(m, k, n), a, b, out)
        })
        .collect();
    let run = |ops: &mut Vec<Op<T>>| {
        for (dims, a, b, out) in ops.iter_mut() {
            matmul_into(a, b, out, *dims, |_, _, blk: &mut [T]| {
                for v in blk {
                    *v = v.maximum(T::ZERO);
                }
            });
        }
    };
    // One warm-up call, with the other worker held busy: all its blocks run on one thread.
    with_one_worker(&pool, || run(&mut ops));
    let reference: Vec<Vec<T>> = ops.iter().map(|op| op.3.clone()).collect();
    let rounds = 20;
    let (counts, ()) = pool.install(|| {
        allocations(|| {
            for _ in 0..rounds {
                run(&mut ops);
            }
        })
    });
    let (allocs, bytes, big) = (counts.all, counts.all_bytes, counts.big);
    // Same results each time (the buffers really were reused, not skipped).
    for (op, r) in ops.iter().zip(&reference) {
        assert!(op.3 == *r, "results changed between runs");
    }
    let name = std::any::type_name::<T>();
    eprintln!("{name}: {rounds} rounds of W2's and W11's products: {allocs} allocations, {bytes} bytes, {big} of >= {BIG} bytes");
    assert_eq!(
        (allocs, bytes),
        (0, 0),
        "{name}: matmul_into allocated in steady state"
    );
}

#[test]
fn matmul_f32_allocates_nothing_after_warm_up() {
    check_steady_state::<f32>();
}

#[test]
fn matmul_f64_allocates_nothing_after_warm_up() {
    check_steady_state::<f64>();
}
