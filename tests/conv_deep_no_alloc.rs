//! Counting-allocator proof that conv2d's patch-GEMM plan for deep kernels allocates nothing in steady state: after one warm-up call whose blocks all ran on one worker, ResNet-18's stage-3 and stage-4 3x3 convolutions at batch 1 (the GEMM split into column panels) and batch 2 (blocks of pixels) run in a 2-thread pool without a heap allocation.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, serial, with_one_worker, BIG};
use graph_runtime::conv::{conv2d_into, conv2d_output_hw, SAME};

/// One convolution: input shape, kernel shape, input, kernel, output.
type Op = ([usize; 4], [usize; 4], Vec<f32>, Vec<f32>, Vec<f32>);

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7 + seed * 13) % 17) as f32 / 8.0 - 1.0)
        .collect()
}

#[test]
fn deep_conv2d_allocates_nothing_after_warm_up() {
    let _serial = serial();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let shapes = [
        ([1, 7, 7, 512], [3, 3, 512, 512]),
        ([1, 14, 14, 256], [3, 3, 256, 256]),
        ([2, 7, 7, 512], [3, 3, 512, 512]),
        ([2, 14, 14, 256], [3, 3, 256, 256]),
    ];
    let mut ops: Vec<Op> = shapes
        .iter()
        .map(|&(xs, ks)| {
            let (oh, ow) = conv2d_output_hw(xs[1], xs[2], ks[0], ks[1], 1, SAME).unwrap();
            let x = values(xs.iter().product(), 1);
            let k = values(ks.iter().product(), 2);
            (xs, ks, x, k, vec![0.0; xs[0] * oh * ow * ks[3]])
        })
        .collect();
    // With a ReLU epilogue, as ResNet's convolutions have.
    let run = |ops: &mut Vec<Op>| {
        for (xs, ks, x, k, out) in ops.iter_mut() {
            conv2d_into(x, *xs, k, *ks, 1, SAME, out, |_, block: &mut [f32]| {
                for v in block {
                    *v = v.max(0.0);
                }
            });
        }
    };
    with_one_worker(&pool, || run(&mut ops));
    let reference: Vec<Vec<f32>> = ops.iter().map(|op| op.4.clone()).collect();
    let rounds = 5;
    let (counts, ()) = pool.install(|| {
        allocations(|| {
            for _ in 0..rounds {
                run(&mut ops);
            }
        })
    });
    for (op, r) in ops.iter().zip(&reference) {
        assert!(op.4 == *r, "results changed between runs");
    }
    let (allocs, bytes, big) = (counts.all, counts.all_bytes, counts.big);
    eprintln!("{rounds} rounds of deep convolutions: {allocs} allocations, {bytes} bytes, {big} of >= {BIG} bytes");
    assert_eq!(
        (allocs, bytes),
        (0, 0),
        "the deep conv2d allocated in steady state"
    );
}
