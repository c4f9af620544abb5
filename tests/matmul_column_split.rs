//! Short products with a large, deep `b` (GPT-2's projections) cut into one column panel a thread: the plan, naive references on odd sizes, NaN and infinities, the epilogue's rows, and results bit for bit independent of the thread count.

mod linalg_harness;

use graph_runtime::matmul::{
    block_plan, matmul_into, no_epilogue, GemmElement, MatmulDims, COLUMN_SPLIT_BELOW_ROWS,
};
use linalg_harness::{assert_close, naive_matmul, Rng};

/// Shapes `(m, k, n)` that take the column split on two threads (`k >= 256`, `k * n` f32
/// over 1 MiB, fewer than `2 * COLUMN_SPLIT_BELOW_ROWS` rows), with odd row counts (every
/// height of a short last tile), a column count that leaves a short last panel, and
/// GPT-2's 128 tokens.
const SPLIT_SHAPES: &[(usize, usize, usize)] = &[
    (1, 260, 1030),
    (7, 260, 1030),
    (128, 768, 520),
    (61, 1023, 300),
    (253, 257, 1041),
    // A `b` over 2 MiB (the AVX-512 driver prefetches its next slice while the tiles run):
    // two slices of 350 and three column blocks, and one block of a deeper `b`.
    (7, 700, 1030),
    (130, 1300, 420),
];

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// `a x b` of `T` on a pool of `threads`, into a buffer of stale values.
fn product<T: GemmElement>(
    threads: usize,
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    let mut out = vec![T::ONE; m * n];
    pool(threads).install(|| matmul_into(a, b, &mut out, MatmulDims::single(m, k, n), no_epilogue));
    out
}

#[test]
fn short_products_with_a_large_deep_b_are_split_by_columns_on_several_threads() {
    for &(m, k, n) in SPLIT_SHAPES {
        let plan = pool(2).install(|| block_plan::<f32>(m, k, n, 1));
        assert!(
            plan.rows == m && plan.cols < n && n.div_ceil(plan.cols) == 2,
            "{m}x{k}x{n} on two threads: {plan:?}"
        );
        let plan = pool(1).install(|| block_plan::<f32>(m, k, n, 1));
        assert!(plan.cols >= n, "{m}x{k}x{n} on one thread: {plan:?}");
    }
    // Row blocks of at least COLUMN_SPLIT_BELOW_ROWS, a small `b` or a shallow one keep the
    // row plan.
    let two = pool(2);
    two.install(|| {
        let tall = 2 * COLUMN_SPLIT_BELOW_ROWS;
        assert!(block_plan::<f32>(tall, 768, 2304, 1).rows < tall);
        assert!(block_plan::<f32>(128, 300, 100, 1).cols >= 100);
        let shallow = block_plan::<f32>(128, 128, 4096, 1);
        assert!(shallow.rows < 128 || shallow.cols >= 4096, "{shallow:?}");
    });
}

#[test]
fn column_split_products_match_naive_for_floats() {
    let mut rng = Rng::new(29);
    for &(m, k, n) in SPLIT_SHAPES {
        for threads in [2, 3] {
            let a: Vec<f32> = rng.values(m * k);
            let b: Vec<f32> = rng.values(k * n);
            let got = product(threads, &a, &b, m, k, n);
            assert_close(
                &got,
                &naive_matmul(&a, &b, m, k, n),
                k as f64,
                &format!("f32 {m}x{k}x{n} on {threads}"),
            );
            let a: Vec<f64> = rng.values(m * k);
            let b: Vec<f64> = rng.values(k * n);
            let got = product(threads, &a, &b, m, k, n);
            assert_close(
                &got,
                &naive_matmul(&a, &b, m, k, n),
                k as f64,
                &format!("f64 {m}x{k}x{n} on {threads}"),
            );
        }
    }
}

/// Every output element is the same chain of multiply-adds whichever thread computes its
/// column panel: one, two and three threads agree bit for bit, NaN and infinities included.
#[test]
fn column_split_results_do_not_depend_on_the_thread_count() {
    let mut rng = Rng::new(30);
    for &(m, k, n) in SPLIT_SHAPES {
        let mut a: Vec<f32> = rng.values(m * k);
        let mut b: Vec<f32> = rng.values(k * n);
        // A NaN in a row of `a`, an infinity in a column of `b`, and one of each sign that
        // meet in a row and column to give NaN (inf - inf).
        a[k / 2] = f32::NAN;
        b[3 * n + n - 1] = f32::INFINITY;
        a[(m - 1) * k + 5] = f32::INFINITY;
        b[5 * n + n / 2] = 1.0;
        b[6 * n + n / 2] = 1.0;
        a[(m - 1) * k + 6] = f32::NEG_INFINITY;
        let one = product(1, &a, &b, m, k, n);
        for threads in [2, 3] {
            let got = product(threads, &a, &b, m, k, n);
            let same = one
                .iter()
                .zip(&got)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{m}x{k}x{n}: {threads} threads differ from one");
        }
        assert!(one[n / 2].is_nan() && one[(m - 1) * n + n / 2].is_nan());
        if m > 2 {
            // Row 1 is finite but for its last column (a multiple of the infinity).
            assert!(!one[2 * n - 1].is_finite());
            let want = naive_matmul(&a, &b, m, k, n);
            assert_close(&one[n..2 * n - 1], &want[n..2 * n - 1], k as f64, "row 1");
        }
    }
}

/// The epilogue of a column-split block runs on whole rows, in parallel, each element once,
/// with its row's position.
#[test]
fn column_split_epilogue_sees_each_row_once() {
    let mut rng = Rng::new(31);
    for &(m, k, n) in SPLIT_SHAPES {
        let a: Vec<f64> = rng.values(m * k);
        let b: Vec<f64> = rng.values(k * n);
        let mut out = vec![0.0f64; m * n];
        pool(2).install(|| {
            matmul_into(
                &a,
                &b,
                &mut out,
                MatmulDims::single(m, k, n),
                |bi, r0, block: &mut [f64]| {
                    assert_eq!((bi, block.len() % n), (0, 0));
                    for (i, v) in block.iter_mut().enumerate() {
                        *v += 1.0 + (r0 + i / n) as f64;
                    }
                },
            )
        });
        let want: Vec<f64> = naive_matmul(&a, &b, m, k, n)
            .iter()
            .enumerate()
            .map(|(i, w)| w + 1.0 + (i / n) as f64)
            .collect();
        assert_close(&out, &want, k as f64, &format!("epilogue {m}x{k}x{n}"));
    }
}

/// Empty products on the split's shapes write nothing and call no epilogue.
#[test]
fn column_split_shapes_with_an_empty_side() {
    for (m, k, n) in [(0, 768, 2304), (128, 768, 0)] {
        let a = vec![1.0f32; m * k];
        let b = vec![1.0f32; k * n];
        let mut out = vec![7.0f32; m * n];
        pool(2).install(|| {
            matmul_into(
                &a,
                &b,
                &mut out,
                MatmulDims::single(m, k, n),
                |_, _, _: &mut [f32]| panic!("an epilogue on an empty product"),
            )
        });
        assert!(out.is_empty());
    }
}
