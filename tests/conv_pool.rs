//! conv2d fused with the pooling that reads it (`max_pool2d(relu(conv2d(..) + b), ..)` runs as one kernel): compiled == eager bit for bit, both == a naive reference, on odd, empty and large sizes, SAME/VALID on both ops, strides, overlapping and gapped windows, NaN and infinities, and the cases that must not fuse.

mod refs;

use grafo::ndarray::{Array1, ArrayD, Ix1, Ix4};
use grafo::prelude::*;
use refs::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// Whether `graph()`'s fusion groups include a fused conv2d + pooling kernel.
fn fuses(g: &grafo::GraphDef) -> bool {
    g.groups.iter().any(|gr| gr.kind == "conv2d_pool")
}

/// `conv2d` then a per-channel bias and an optional relu, in f64.
fn ref_layer(
    x: &ArrayD<f64>,
    k: &ArrayD<f64>,
    stride: usize,
    same: bool,
    bias: Option<&ArrayD<f64>>,
    relu: bool,
) -> ArrayD<f64> {
    let c = ref_conv2d(x, k, stride, same);
    ArrayD::from_shape_fn(c.raw_dim(), |ix| {
        let v = c[&ix] + bias.map_or(0.0, |b| b[[ix[3]]]);
        if relu {
            ref_relu(v)
        } else {
            v
        }
    })
}

/// Compiled, eager and `Session` results all equal the eager bits and the reference.
fn check<D: grafo::ndarray::Dimension>(
    what: &str,
    results: &[(&str, grafo::ndarray::Array<f32, D>)],
    want: &ArrayD<f64>,
) {
    let eager = to_f64(&results[1].1);
    for (how, got) in results {
        assert_close(&format!("{what} {how}"), got, want);
        assert_exact(&format!("{what} {how} == eager"), got, &eager);
    }
}

/// Overlapping 3x3 windows at stride 1 after a SAME conv: each conv row is read by three
/// pooled rows, so neighbouring bands compute it twice.
#[graph]
fn overlapping(
    x: Tensor<f32, N, H, W, 3>,
    k: Tensor<f32, 3, 3, 3, 16>,
    b: Tensor<f32, 16>,
) -> Tensor<f32, N, H, W, 16> {
    max_pool2d(relu(conv2d(x, k, 1, SAME) + b), 3, 1, SAME)
}

#[test]
fn overlapping_windows_on_odd_and_empty_sizes() {
    assert!(fuses(&overlapping::graph()));
    let sizes = [
        (1usize, 1usize, 1usize),
        (2, 7, 5),
        (0, 4, 4),
        (1, 0, 3),
        (1, 33, 31),
        (1, 1, 1023),
        (3, 20, 9),
    ];
    for (n, h, w) in sizes {
        let x = rand_arr(1 + h as u64, Ix4(n, h, w, 3), -1.0, 1.0);
        let k = rand_arr(2, Ix4(3, 3, 3, 16), -0.5, 0.5);
        let b = rand_arr(3, Ix1(16), -0.2, 0.2);
        let layer = ref_layer(&to_f64(&x), &to_f64(&k), 1, true, Some(&to_f64(&b)), true);
        let want = ref_pool(&layer, [3, 3], [1, 1], true, true);
        let r = runs_ok!(overlapping(&x, &k, &b));
        check(&format!("overlapping {n}x{h}x{w}"), &r, &want);
    }
}

/// A strided VALID conv, then average pooling 2/2 VALID that drops the conv's last row and
/// column (no window reads them).
#[graph]
fn strided_avg(
    x: Tensor<f32, N, 15, 13, 3>,
    k: Tensor<f32, 3, 3, 3, 8>,
    b: Tensor<f32, 8>,
) -> Tensor<f32, N, 3, 3, 8> {
    avg_pool2d(tanh(conv2d(x, k, 2, VALID) + b), 2, 2, VALID)
}

#[test]
fn strided_conv_then_average_pooling() {
    assert!(fuses(&strided_avg::graph()));
    for n in [0usize, 1, 3, 17] {
        let x = rand_arr(10 + n as u64, Ix4(n, 15, 13, 3), -1.0, 1.0);
        let k = rand_arr(11, Ix4(3, 3, 3, 8), -0.5, 0.5);
        let b = rand_arr(12, Ix1(8), -0.2, 0.2);
        let c = ref_layer(&to_f64(&x), &to_f64(&k), 2, false, Some(&to_f64(&b)), false);
        let want = ref_pool(&map1(&c, f64::tanh), [2, 2], [2, 2], false, false);
        let r = runs_ok!(strided_avg(&x, &k, &b));
        check(&format!("strided avg n={n}"), &r, &want);
    }
}

/// Windows with gaps between them (stride larger than the window) and SAME padding on the
/// pooling of a VALID 5x5 conv.
#[graph]
fn gapped(x: Tensor<f32, N, 20, 17, 2>, k: Tensor<f32, 5, 5, 2, 7>) -> Tensor<f32, N, 6, 7, 7> {
    max_pool2d(abs(conv2d(x, k, 1, VALID)) * 0.5, [2, 3], [3, 2], SAME)
}

#[test]
fn gapped_windows_and_same_pooling() {
    assert!(fuses(&gapped::graph()));
    for n in [1usize, 2] {
        let mut x = rand_arr(20 + n as u64, Ix4(n, 20, 17, 2), -1.0, 1.0);
        // A NaN reaches every conv pixel whose patch covers it, and through max pooling.
        x[[0, 9, 8, 1]] = f32::NAN;
        x[[n - 1, 0, 16, 0]] = f32::INFINITY;
        let k = rand_arr(21, Ix4(5, 5, 2, 7), -0.5, 0.5);
        let c = ref_layer(&to_f64(&x), &to_f64(&k), 1, false, None, false);
        let want = ref_pool(&map1(&c, |v| v.abs() * 0.5), [2, 3], [3, 2], true, true);
        let r = runs_ok!(gapped(&x, &k));
        check(&format!("gapped n={n}"), &r, &want);
        assert!(r[0].1.iter().any(|v| v.is_nan()), "the NaN propagates");
    }
}

/// A bare conv (no epilogue) pooled, in f64: average 3/2 SAME over a SAME conv.
#[graph]
fn bare_f64(x: Tensor<f64, N, 9, 9, 4>, k: Tensor<f64, 3, 3, 4, 5>) -> Tensor<f64, N, 5, 5, 5> {
    avg_pool2d(conv2d(x, k, 1, SAME), 3, 2, SAME)
}

#[test]
fn bare_conv_pooled_in_f64() {
    assert!(fuses(&bare_f64::graph()));
    for n in [0usize, 1, 4] {
        let mut x = rand_f64(30 + n as u64, Ix4(n, 9, 9, 4), -1.0, 1.0);
        if n == 4 {
            x[[2, 4, 4, 3]] = f64::NEG_INFINITY;
        }
        let k = rand_f64(31, Ix4(3, 3, 4, 5), -0.5, 0.5);
        let want = ref_pool(
            &ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true),
            [3, 3],
            [2, 2],
            true,
            false,
        );
        let r = runs_ok!(bare_f64(&x, &k));
        let eager = to_f64(&r[1].1);
        for (how, got) in &r {
            assert_close(&format!("bare f64 n={n} {how}"), got, &want);
            assert_exact(&format!("bare f64 n={n} {how} == eager"), got, &eager);
        }
    }
}

/// An epilogue reading a tensor of the conv's own shape (a residual): the fused kernel hands
/// the epilogue each band's flat pixel index, so it reads the right elements of `y`.
#[graph]
fn residual(
    x: Tensor<f32, N, 12, 10, 3>,
    k: Tensor<f32, 3, 3, 3, 8>,
    y: Tensor<f32, N, 12, 10, 8>,
) -> Tensor<f32, N, 6, 5, 8> {
    max_pool2d(conv2d(x, k, 1, SAME) + y, 2, 2, VALID)
}

#[test]
fn epilogue_with_a_full_shape_operand() {
    assert!(fuses(&residual::graph()));
    for n in [1usize, 5] {
        let x = rand_arr(40 + n as u64, Ix4(n, 12, 10, 3), -1.0, 1.0);
        let k = rand_arr(41, Ix4(3, 3, 3, 8), -0.5, 0.5);
        let mut y = rand_arr(42 + n as u64, Ix4(n, 12, 10, 8), -1.0, 1.0);
        y[[n - 1, 11, 9, 7]] = f32::NEG_INFINITY;
        let c = ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true);
        let want = ref_pool(
            &zip2(&c, &to_f64(&y), |a, b| a + b),
            [2, 2],
            [2, 2],
            false,
            true,
        );
        let r = runs_ok!(residual(&x, &k, &y));
        check(&format!("residual n={n}"), &r, &want);
    }
}

/// The TF tutorial's first layer at MNIST's size, batch large enough to run in parallel.
#[graph]
fn mnist_layer(
    x: Tensor<f32, B, 28, 28, 1>,
    k: Tensor<f32, 3, 3, 1, 32>,
    b: Tensor<f32, 32>,
) -> Tensor<f32, B, 13, 13, 32> {
    max_pool2d(relu(conv2d(x, k, 1, VALID) + b), 2, 2, VALID)
}

#[test]
fn mnist_first_layer_in_parallel() {
    assert!(fuses(&mnist_layer::graph()));
    for b in [1usize, 7, 32] {
        let x = rand_arr(50 + b as u64, Ix4(b, 28, 28, 1), 0.0, 1.0);
        let k = rand_arr(51, Ix4(3, 3, 1, 32), -0.5, 0.5);
        let bias = rand_arr(52, Ix1(32), -0.1, 0.1);
        let layer = ref_layer(
            &to_f64(&x),
            &to_f64(&k),
            1,
            false,
            Some(&to_f64(&bias)),
            true,
        );
        let want = ref_pool(&layer, [2, 2], [2, 2], false, true);
        let r = runs_ok!(mnist_layer(&x, &k, &bias));
        check(&format!("mnist layer B={b}"), &r, &want);
    }
}

/// The conv's value is also a result, so it must be materialised: no fusion, same values.
#[graph]
fn conv_also_returned(
    x: Tensor<f32, 1, 8, 8, 2>,
    k: Tensor<f32, 3, 3, 2, 4>,
    b: Tensor<f32, 4>,
) -> (Tensor<f32, 1, 8, 8, 4>, Tensor<f32, 1, 4, 4, 4>) {
    let c = relu(conv2d(x, k, 1, SAME) + b);
    (c, max_pool2d(c, 2, 2, VALID))
}

/// The pooled conv is read by a second op too: no fusion.
#[graph]
fn conv_read_twice(
    x: Tensor<f32, 1, 8, 8, 2>,
    k: Tensor<f32, 3, 3, 2, 4>,
) -> (Tensor<f32, 1, 4, 4, 4>, Tensor<f32>) {
    let c = conv2d(x, k, 1, SAME);
    (max_pool2d(c, 2, 2, VALID), reduce_sum(c))
}

#[test]
fn shared_conv_values_are_not_fused() {
    assert!(!fuses(&conv_also_returned::graph()));
    assert!(!fuses(&conv_read_twice::graph()));
    let x = rand_arr(60, Ix4(1, 8, 8, 2), -1.0, 1.0);
    let k = rand_arr(61, Ix4(3, 3, 2, 4), -0.5, 0.5);
    let b: Array1<f32> = rand_arr(62, Ix1(4), -0.1, 0.1);
    let c = ref_layer(&to_f64(&x), &to_f64(&k), 1, true, Some(&to_f64(&b)), true);
    let pooled = ref_pool(&c, [2, 2], [2, 2], false, true);
    for (how, (rc, rp)) in runs_ok!(conv_also_returned(&x, &k, &b)) {
        assert_close(&format!("conv result {how}"), &rc, &c);
        assert_close(&format!("pooled {how}"), &rp, &pooled);
    }
    let c = ref_conv2d(&to_f64(&x), &to_f64(&k), 1, true);
    let pooled = ref_pool(&c, [2, 2], [2, 2], false, true);
    for (how, (rp, total)) in runs_ok!(conv_read_twice(&x, &k)) {
        assert_close(&format!("pooled twice-read {how}"), &rp, &pooled);
        let want = c.sum();
        assert!(
            (total.into_scalar() as f64 - want).abs() < 1e-4 * (1.0 + want.abs()),
            "sum {how}"
        );
    }
}
