//! Counting-allocator proof that `matmul_nd_into` allocates nothing in steady state (after one
//! warm-up call that ran on one worker alone, so that the other meets its first blocks, and
//! their scratch, in steady state), on the
//! transformer's products: `[B, H, S, D] x [B, H, D, S]` read transposed in place, a
//! partially broadcast batch (`[B, 1]` against `[H]`), and `[B, S, D] x [D, E]`; and with the
//! left operand read transposed in place (alone and with the right one).

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, serial, with_one_worker};
use graph_runtime::matmul::GemmElement;
use graph_runtime::matmul_nd::{matmul_nd_into, NdMatmul};

/// One product: the batch shapes of `a` and `b`, `m, k, n`, whether `a` and `b` are transposed.
type Case = (&'static [usize], &'static [usize], [usize; 3], [bool; 2]);

const CASES: [Case; 5] = [
    (&[2, 4], &[2, 4], [64, 16, 64], [false, true]),
    (&[2, 1], &[4], [64, 16, 16], [false, false]),
    (&[2], &[], [64, 256, 256], [false, false]),
    (&[2, 4], &[2, 4], [64, 16, 64], [true, false]),
    (&[], &[], [300, 64, 200], [true, true]),
];

fn values<T: GemmElement>(len: usize, seed: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_f64(((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0))
        .collect()
}

fn check_steady_state<T: GemmElement>() {
    let _serial = serial();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut ops: Vec<(Vec<T>, Vec<T>, Vec<T>)> = CASES
        .iter()
        .map(|(ab, bb, [m, k, n], _)| {
            let na: usize = ab.iter().product();
            let nb: usize = bb.iter().product();
            let out = na.max(nb) * 4 * m * n;
            (
                values::<T>(na * m * k, 1),
                values::<T>(nb * k * n, 2),
                vec![T::ZERO; out],
            )
        })
        .collect();
    let run = |ops: &mut Vec<(Vec<T>, Vec<T>, Vec<T>)>| {
        for ((ab, bb, [m, k, n], [at, bt]), (a, b, out)) in CASES.iter().zip(ops.iter_mut()) {
            let spec = NdMatmul {
                a_batch: ab,
                b_batch: bb,
                m: *m,
                k: *k,
                n: *n,
                a_transposed: *at,
                b_transposed: *bt,
            };
            matmul_nd_into(a, b, out, spec, |_, _, blk: &mut [T]| {
                for v in blk {
                    *v = v.maximum(T::ZERO);
                }
            });
        }
    };
    // One warm-up call with the other worker held busy: every block runs on one thread, so
    // scratch that each thread grew for itself would be missing on the other one below.
    with_one_worker(&pool, || run(&mut ops));
    let reference: Vec<Vec<T>> = ops.iter().map(|op| op.2.clone()).collect();
    // Counted on a worker of the pool: `install` from outside would push on rayon's global
    // queue, which allocates a block every 63 pushes.
    let (counts, ()) = pool.install(|| {
        allocations(|| {
            for _ in 0..20 {
                run(&mut ops);
            }
        })
    });
    for (op, r) in ops.iter().zip(&reference) {
        assert!(op.2 == *r, "results changed between runs");
    }
    assert_eq!(
        (counts.all, counts.all_bytes),
        (0, 0),
        "{}: matmul_nd_into allocated in steady state",
        std::any::type_name::<T>()
    );
}

#[test]
fn matmul_nd_f32_allocates_nothing_after_warm_up() {
    check_steady_state::<f32>();
}

#[test]
fn matmul_nd_f64_allocates_nothing_after_warm_up() {
    check_steady_state::<f64>();
}
