//! `#[graph] mod`: graph functions calling each other (inlined at the call, symbols bound
//! from the arguments), checked compiled vs eager vs a naive reference written here.

use grafo::ndarray::IxDyn;
use grafo::prelude::*;

#[graph]
mod layers {
    /// Layer norm over the last axis, written once and called twice below.
    pub fn layer_norm(
        x: Tensor<f32, R, C>,
        gamma: Tensor<f32, C>,
        beta: Tensor<f32, C>,
    ) -> Tensor<f32, R, C> {
        let mean = reduce_mean(x, -1, true);
        let centred = x - mean;
        let var = reduce_mean(centred * centred, -1, true);
        centred * rsqrt(var + 1e-5) * gamma + beta
    }

    pub fn dense(
        x: Tensor<f32, R, I>,
        w: Tensor<f32, I, O>,
        b: Tensor<f32, O>,
    ) -> Tensor<f32, R, O> {
        relu(matmul(x, w) + b)
    }

    /// Two results, bound with a tuple pattern by the caller.
    pub fn stats(x: Tensor<f32, R, C>) -> (Tensor<f32, R>, Tensor<f32, R>) {
        (reduce_max(x, -1), reduce_min(x, -1))
    }

    /// A callee with a host parameter and a shape written with its own symbol.
    pub fn scaled_plus_ones(x: Tensor<f32, N>, s: f32) -> Tensor<f32, N> {
        let o: Tensor<f32, N> = ones([N]);
        x * s + o
    }

    /// The block: dense, layer norm, dense, layer norm; the callee's `R` is the caller's `B`.
    pub fn block(
        x: Tensor<f32, B, 8>,
        w1: Tensor<f32, 8, 16>,
        b1: Tensor<f32, 16>,
        g1: Tensor<f32, 16>,
        beta1: Tensor<f32, 16>,
        w2: Tensor<f32, 16, 8>,
        b2: Tensor<f32, 8>,
        g2: Tensor<f32, 8>,
        beta2: Tensor<f32, 8>,
    ) -> (Tensor<f32, B, 8>, Tensor<f32, B>, Tensor<f32, B>) {
        let h = layer_norm(dense(x, w1, b1), g1, beta1);
        let y = layer_norm(dense(h, w2, b2), g2, beta2) + x;
        let (hi, lo) = stats(y);
        (y, hi, lo)
    }

    /// Nested results: a callee returning `(tensor, (tensor, tensor))`, destructured by its caller.
    pub fn moments(x: Tensor<f32, N>) -> (Tensor<f32>, (Tensor<f32>, Tensor<f32>)) {
        let m = reduce_mean(x);
        (m, (reduce_max(x), reduce_min(x)))
    }

    pub fn spread(x: Tensor<f32, N>) -> (Tensor<f32>, (Tensor<f32, N>, Tensor<f32>)) {
        let (m, (hi, lo)) = moments(x);
        (hi - lo, (x - m, m))
    }

    /// A call inside a cond arm, and a call with a literal for the host parameter.
    pub fn gated(x: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32, N> {
        let mut y = x;
        if reduce_sum(x) > limit {
            y = scaled_plus_ones(x, 0.5);
        }
        y
    }
}

fn filled(shape: &[usize], seed: u32) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| {
            let v = (i as u32)
                .wrapping_mul(2654435761)
                .wrapping_add(seed.wrapping_mul(97))
                >> 8;
            (v % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
}

/// Naive layer norm over the last axis of a 2-D array, in f64.
fn layer_norm_ref(x: &Array2<f64>, g: &Array1<f64>, b: &Array1<f64>) -> Array2<f64> {
    let (r, c) = x.dim();
    let mut out = Array2::<f64>::zeros((r, c));
    for i in 0..r {
        let mean: f64 = (0..c).map(|j| x[[i, j]]).sum::<f64>() / c as f64;
        let var: f64 = (0..c).map(|j| (x[[i, j]] - mean).powi(2)).sum::<f64>() / c as f64;
        for j in 0..c {
            out[[i, j]] = (x[[i, j]] - mean) / (var + 1e-5).sqrt() * g[j] + b[j];
        }
    }
    out
}

fn dense_ref(x: &Array2<f64>, w: &Array2<f64>, b: &Array1<f64>) -> Array2<f64> {
    let (r, i_dim) = x.dim();
    let o = w.dim().1;
    let mut out = Array2::<f64>::zeros((r, o));
    for i in 0..r {
        for j in 0..o {
            let s: f64 = (0..i_dim).map(|k| x[[i, k]] * w[[k, j]]).sum::<f64>() + b[j];
            out[[i, j]] = s.max(0.0);
        }
    }
    out
}

fn to2(a: &ArrayD<f32>) -> Array2<f32> {
    a.clone().into_dimensionality().unwrap()
}

fn to1(a: &ArrayD<f32>) -> Array1<f32> {
    a.clone().into_dimensionality().unwrap()
}

#[test]
fn block_matches_eager_and_reference() {
    for rows in [1usize, 7, 33, 0] {
        let x = to2(&filled(&[rows, 8], 1));
        let w1 = to2(&filled(&[8, 16], 2));
        let b1 = to1(&filled(&[16], 3));
        let g1 = to1(&filled(&[16], 4));
        let beta1 = to1(&filled(&[16], 5));
        let w2 = to2(&filled(&[16, 8], 6));
        let b2 = to1(&filled(&[8], 7));
        let g2 = to1(&filled(&[8], 8));
        let beta2 = to1(&filled(&[8], 9));
        let compiled = layers::block(&x, &w1, &b1, &g1, &beta1, &w2, &b2, &g2, &beta2).unwrap();
        let eager = layers::block::eager(&x, &w1, &b1, &g1, &beta1, &w2, &b2, &g2, &beta2).unwrap();
        assert_eq!(
            compiled.0, eager.0,
            "rows {rows}: compiled and eager differ"
        );
        assert_eq!(compiled.1, eager.1);
        assert_eq!(compiled.2, eager.2);

        let f = |a: &Array2<f32>| a.mapv(f64::from);
        let g = |a: &Array1<f32>| a.mapv(f64::from);
        let h = layer_norm_ref(&dense_ref(&f(&x), &f(&w1), &g(&b1)), &g(&g1), &g(&beta1));
        let y = layer_norm_ref(&dense_ref(&h, &f(&w2), &g(&b2)), &g(&g2), &g(&beta2)) + f(&x);
        assert_eq!(compiled.0.dim(), (rows, 8));
        for ((i, j), want) in y.indexed_iter() {
            let got = f64::from(compiled.0[[i, j]]);
            assert!(
                (got - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "[{i}, {j}]: {got} vs {want}"
            );
        }
        for i in 0..rows {
            let hi = (0..8).map(|j| y[[i, j]]).fold(f64::MIN, f64::max);
            let lo = (0..8).map(|j| y[[i, j]]).fold(f64::MAX, f64::min);
            assert!((f64::from(compiled.1[i]) - hi).abs() < 1e-3);
            assert!((f64::from(compiled.2[i]) - lo).abs() < 1e-3);
        }
    }
}

#[test]
fn callees_are_graph_functions_too() {
    let x = to2(&filled(&[5, 3], 11));
    let g = to1(&filled(&[3], 12));
    let b = to1(&filled(&[3], 13));
    let compiled = layers::layer_norm(&x, &g, &b).unwrap();
    let eager = layers::layer_norm::eager(&x, &g, &b).unwrap();
    assert_eq!(compiled, eager);
    let want = layer_norm_ref(&x.mapv(f64::from), &g.mapv(f64::from), &b.mapv(f64::from));
    for ((i, j), w) in want.indexed_iter() {
        assert!((f64::from(compiled[[i, j]]) - w).abs() < 1e-4);
    }
    // The inlined call of `layer_norm` in `block` leaves no call node: the graph has only ops.
    let def = layers::block::graph();
    assert!(def
        .nodes
        .iter()
        .all(|n| n.op != "layer_norm" && n.op != "dense"));
    assert!(def.nodes.iter().filter(|n| n.op == "matmul").count() == 2);
}

#[test]
fn a_call_in_a_cond_arm_with_a_host_literal() {
    for n in [1usize, 7, 1023, 0] {
        let x = to1(&filled(&[n], 21));
        let sum: f64 = x.iter().map(|&v| f64::from(v)).sum();
        for limit in [f32::NEG_INFINITY, f32::INFINITY] {
            let l = arr0(limit);
            let compiled = layers::gated(&x, &l).unwrap();
            let eager = layers::gated::eager(&x, &l).unwrap();
            assert_eq!(compiled, eager);
            for (i, &v) in x.iter().enumerate() {
                let want = if sum > f64::from(limit) {
                    v * 0.5 + 1.0
                } else {
                    v
                };
                assert_eq!(compiled[i], want, "n {n}, limit {limit}, [{i}]");
            }
        }
    }
}

#[test]
fn symbols_bound_at_a_call_are_checked_at_entry() {
    // `block` takes x: [B, 8]; a wrong static axis is an `Err` naming the parameter.
    let x = Array2::<f32>::zeros((2, 9));
    let w1 = Array2::<f32>::zeros((8, 16));
    let v16 = Array1::<f32>::zeros(16);
    let w2 = Array2::<f32>::zeros((16, 8));
    let v8 = Array1::<f32>::zeros(8);
    let err = layers::block(&x, &w1, &v16, &v16, &v16, &w2, &v8, &v8, &v8).unwrap_err();
    assert!(err.to_string().contains('x'), "{err}");
}

#[test]
fn nested_tuple_results() {
    for n in [1usize, 7, 1023] {
        let x = to1(&filled(&[n], 31));
        let (range, (centred, mean)) = layers::spread(&x).unwrap();
        let (range_e, (centred_e, mean_e)) = layers::spread::eager(&x).unwrap();
        assert_eq!(range, range_e);
        assert_eq!(mean, mean_e);
        assert_eq!(centred, centred_e);
        let hi = x.iter().copied().fold(f32::MIN, f32::max);
        let lo = x.iter().copied().fold(f32::MAX, f32::min);
        assert_eq!(range[()], hi - lo);
        let want_mean: f64 = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        assert!((f64::from(mean[()]) - want_mean).abs() < 1e-5);
        for i in 0..n {
            assert_eq!(centred[i], x[i] - mean[()]);
        }
        let (m, (a, b)) = layers::moments(&x).unwrap();
        assert_eq!((a[()], b[()]), (hi, lo));
        assert_eq!(
            m, mean,
            "the same graph compiled twice (alone and inlined) gives the same bits"
        );
    }
}

/// A module's literal `const` items, seen by every function of the `#[graph] mod` (and by
/// an inlined callee) as if declared in its body: a `for` bound, an operand, an axis.
#[graph]
mod with_consts {
    const STEPS: usize = 3;
    const HALF: f32 = 0.5;
    const LAST: i32 = -1;

    pub fn halve_steps(x: Tensor<f32, N>) -> Tensor<f32, N> {
        let mut y = x;
        for _ in 0..STEPS {
            y = y * HALF;
        }
        y
    }

    pub fn row_sums_of_halved(x: Tensor<f32, R, C>) -> Tensor<f32, R> {
        reduce_sum(reshape(halve_steps(reshape(x, [R * C])), [R, C]), LAST)
    }

    pub fn shadowed(x: Tensor<f32, N>) -> Tensor<f32, N> {
        const HALF: f32 = 2.0;
        x * HALF
    }
}

#[test]
fn module_consts_are_seen_by_every_function_and_callee() {
    for n in [0usize, 1, 7, 1023] {
        let x = Array1::from_shape_fn(n, |i| i as f32 - 3.5);
        let want = x.mapv(|v| v * 0.5 * 0.5 * 0.5);
        for got in [
            with_consts::halve_steps(&x).unwrap(),
            with_consts::halve_steps::eager(&x).unwrap(),
        ] {
            assert_eq!(got, want, "n = {n}");
        }
        assert_eq!(with_consts::shadowed(&x).unwrap(), x.mapv(|v| v * 2.0));
        let m = Array2::from_shape_fn((n, 3), |(i, j)| (i * 3 + j) as f32);
        let sums: Array1<f32> = (0..n)
            .map(|i| {
                (0..3)
                    .map(|j| m[[i, j]] * 0.5 * 0.5 * 0.5)
                    .fold(0.0f64, |s, v| s + v as f64) as f32
            })
            .collect();
        for got in [
            with_consts::row_sums_of_halved(&m).unwrap(),
            with_consts::row_sums_of_halved::eager(&m).unwrap(),
        ] {
            assert_eq!(got, sums, "n = {n}");
        }
    }
}
