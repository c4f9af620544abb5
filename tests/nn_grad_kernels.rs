//! The gradient kernels of the convolutions, pooling and `gather`, and `conv2d_transpose`,
//! through `#[graph]`: `gradients(y, xs, dy)` with a given `dy` is exactly the input / filter /
//! pooling / scatter-add kernel, so each case runs compiled, eager and in a `Session` against
//! a naive reference written in this file (plain loops over the forward op's taps), on odd
//! sizes (1, 7, a 1-pixel image, an empty batch), both paddings, strides 1 and 2, dilation 2.

mod refs;

use grafo::ndarray::{ArrayD, Ix2, Ix4, IxDyn};
use grafo::prelude::*;
use refs::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// TF's output size and padding before along one axis (`k` taps `d` apart).
fn out_pad(len: usize, k: usize, d: usize, s: usize, same: bool) -> (usize, usize) {
    let span = (k - 1) * d + 1;
    if same {
        let out = len.div_ceil(s);
        let total = ((out.max(1) - 1) * s + span).saturating_sub(len);
        (out, total / 2)
    } else {
        ((len - span) / s + 1, 0)
    }
}

/// A convolution's attributes.
#[derive(Clone, Copy, Debug)]
struct Conv {
    stride: usize,
    same: bool,
    dil: usize,
    depthwise: bool,
}

/// Every tap of the forward convolution as `(x index, k index, y index)` (flat, row-major).
fn taps(xs: &[usize], ks: &[usize], c: Conv) -> (Vec<(usize, usize, usize)>, Vec<usize>) {
    let (n, h, w, ch) = (xs[0], xs[1], xs[2], xs[3]);
    let (kh, kw, m) = (ks[0], ks[1], ks[3]);
    let (oh, pt) = out_pad(h, kh, c.dil, c.stride, c.same);
    let (ow, pl) = out_pad(w, kw, c.dil, c.stride, c.same);
    let f = if c.depthwise { ch * m } else { m };
    let mut out = Vec::new();
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                for di in 0..kh {
                    for dj in 0..kw {
                        let y = (i * c.stride + di * c.dil) as isize - pt as isize;
                        let x = (j * c.stride + dj * c.dil) as isize - pl as isize;
                        if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
                            continue;
                        }
                        for cc in 0..ch {
                            for mm in 0..m {
                                let xi = ((b * h + y as usize) * w + x as usize) * ch + cc;
                                let ki = ((di * kw + dj) * ch + cc) * m + mm;
                                let o = if c.depthwise { cc * m + mm } else { mm };
                                out.push((xi, ki, ((b * oh + i) * ow + j) * f + o));
                            }
                        }
                    }
                }
            }
        }
    }
    (out, vec![n, oh, ow, f])
}

/// The naive input and filter gradients of a convolution given `dy`.
fn ref_conv_grads(
    x: &ArrayD<f64>,
    k: &ArrayD<f64>,
    dy: &ArrayD<f64>,
    c: Conv,
) -> (ArrayD<f64>, ArrayD<f64>) {
    let (t, ys) = taps(x.shape(), k.shape(), c);
    assert_eq!(dy.shape(), &ys[..]);
    let (xv, kv, dv) = (flat(x), flat(k), flat(dy));
    let mut dx = vec![0.0; xv.len()];
    let mut dk = vec![0.0; kv.len()];
    for (xi, ki, yi) in t {
        dx[xi] += dv[yi] * kv[ki];
        dk[ki] += dv[yi] * xv[xi];
    }
    (
        ArrayD::from_shape_vec(IxDyn(x.shape()), dx).unwrap(),
        ArrayD::from_shape_vec(IxDyn(k.shape()), dk).unwrap(),
    )
}

fn flat(a: &ArrayD<f64>) -> Vec<f64> {
    a.iter().copied().collect()
}

/// Bit-for-bit equality of two results (shape included).
fn assert_bits<T: AsF64, D: grafo::ndarray::Dimension>(
    what: &str,
    a: &grafo::ndarray::Array<T, D>,
    b: &grafo::ndarray::Array<T, D>,
) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            x.as_f64().to_bits() == y.as_f64().to_bits(),
            "{what}[{i}]: {} != {}",
            x.as_f64(),
            y.as_f64()
        );
    }
}

/// `gradients(conv(x, k), (x, k), dy)` for one geometry: the input and filter gradient kernels.
macro_rules! conv_case {
    ($name:ident, $t:ty, $op:ident, [$h:tt, $w:tt, $c:tt], [$kh:tt, $kw:tt, $kc:tt, $m:tt], [$oh:tt, $ow:tt, $f:tt], $s:tt, $pad:tt, $d:tt) => {
        #[graph]
        fn $name(
            x: Tensor<$t, B, $h, $w, $c>,
            k: Tensor<$t, $kh, $kw, $kc, $m>,
            dy: Tensor<$t, B, $oh, $ow, $f>,
        ) -> (Tensor<$t, B, $h, $w, $c>, Tensor<$t, $kh, $kw, $kc, $m>) {
            let y = $op(x, k, $s, $pad, $d);
            gradients(y, (x, k), dy)
        }
    };
}

conv_case!(
    c_same_s1,
    f64,
    conv2d,
    [7, 7, 3],
    [3, 3, 3, 4],
    [7, 7, 4],
    1,
    SAME,
    1
);
conv_case!(
    c_valid_s2,
    f64,
    conv2d,
    [7, 6, 2],
    [3, 3, 2, 5],
    [3, 2, 5],
    2,
    VALID,
    1
);
conv_case!(
    c_same_s2,
    f64,
    conv2d,
    [7, 7, 3],
    [3, 3, 3, 2],
    [4, 4, 2],
    2,
    SAME,
    1
);
conv_case!(
    c_pixel,
    f64,
    conv2d,
    [1, 1, 1],
    [1, 1, 1, 1],
    [1, 1, 1],
    1,
    SAME,
    1
);
conv_case!(
    c_pixel_k3,
    f64,
    conv2d,
    [1, 1, 3],
    [3, 3, 3, 2],
    [1, 1, 2],
    2,
    SAME,
    1
);
conv_case!(
    c_dil_same,
    f64,
    conv2d,
    [7, 7, 2],
    [3, 3, 2, 3],
    [7, 7, 3],
    1,
    SAME,
    2
);
conv_case!(
    c_dil_valid_s2,
    f64,
    conv2d,
    [9, 8, 2],
    [2, 3, 2, 3],
    [4, 2, 3],
    2,
    VALID,
    2
);
conv_case!(
    c_big_f32,
    f32,
    conv2d,
    [20, 19, 16],
    [3, 3, 16, 24],
    [10, 10, 24],
    2,
    SAME,
    1
);
conv_case!(
    d_same_s1,
    f64,
    depthwise_conv2d,
    [7, 7, 3],
    [3, 3, 3, 1],
    [7, 7, 3],
    1,
    SAME,
    1
);
conv_case!(
    d_valid_s2,
    f64,
    depthwise_conv2d,
    [7, 6, 2],
    [3, 3, 2, 2],
    [3, 2, 4],
    2,
    VALID,
    1
);
conv_case!(
    d_dil_same,
    f64,
    depthwise_conv2d,
    [7, 7, 2],
    [3, 3, 2, 1],
    [7, 7, 2],
    1,
    SAME,
    2
);
conv_case!(
    d_pixel,
    f64,
    depthwise_conv2d,
    [1, 1, 2],
    [1, 1, 2, 3],
    [1, 1, 6],
    1,
    VALID,
    1
);
conv_case!(
    d_big_f32,
    f32,
    depthwise_conv2d,
    [30, 30, 8],
    [3, 3, 8, 1],
    [15, 15, 8],
    2,
    SAME,
    1
);

#[allow(clippy::type_complexity)]
type ConvFn<T> = fn(
    &grafo::ndarray::Array4<T>,
    &grafo::ndarray::Array4<T>,
    &grafo::ndarray::Array4<T>,
) -> Result<(grafo::ndarray::Array4<T>, grafo::ndarray::Array4<T>), Error>;

/// Runs one conv case over batches 0, 1 and 3: compiled == eager == session bit for bit,
/// all within `tol` of the naive gradients.
fn check_conv<T: AsF64 + grafo::Element>(
    what: &str,
    fns: [ConvFn<T>; 3],
    xs: [usize; 3],
    ks: [usize; 4],
    c: Conv,
    from: fn(f64) -> T,
    tol: f64,
) {
    for b in [0usize, 1, 3] {
        let x = rand_f64(11 + b as u64, Ix4(b, xs[0], xs[1], xs[2]), -1.0, 1.0);
        let k = rand_f64(12, Ix4(ks[0], ks[1], ks[2], ks[3]), -1.0, 1.0);
        let (_, ys) = taps(x.shape(), k.shape(), c);
        let dy = rand_f64(13 + b as u64, Ix4(ys[0], ys[1], ys[2], ys[3]), -1.0, 1.0);
        let (dx_ref, dk_ref) = ref_conv_grads(
            &x.clone().into_dyn(),
            &k.clone().into_dyn(),
            &dy.clone().into_dyn(),
            c,
        );
        let (xt, kt, dyt) = (x.mapv(from), k.mapv(from), dy.mapv(from));
        let got: Vec<_> = fns.iter().map(|f| f(&xt, &kt, &dyt).unwrap()).collect();
        for (how, (dx, dk)) in ["compiled", "eager", "session"].iter().zip(&got) {
            let w = format!("{what} B={b} {how}");
            assert_close_tol(&format!("{w} dx"), dx, &dx_ref, tol, tol);
            assert_close_tol(&format!("{w} dk"), dk, &dk_ref, tol, tol);
            assert_bits(&format!("{w} dx vs compiled"), dx, &got[0].0);
            assert_bits(&format!("{w} dk vs compiled"), dk, &got[0].1);
        }
    }
}

macro_rules! fns {
    ($f:ident) => {
        [
            |x, k, dy| $f(x, k, dy),
            |x, k, dy| $f::eager(x, k, dy),
            |x, k, dy| $f::run(&mut Session::default(), x, k, dy),
        ]
    };
}

#[test]
fn conv2d_input_and_filter_gradients() {
    let conv = |stride, same, dil| Conv {
        stride,
        same,
        dil,
        depthwise: false,
    };
    let f = |v: f64| v;
    let t = 1e-12;
    check_conv(
        "same s1",
        fns!(c_same_s1),
        [7, 7, 3],
        [3, 3, 3, 4],
        conv(1, true, 1),
        f,
        t,
    );
    check_conv(
        "valid s2",
        fns!(c_valid_s2),
        [7, 6, 2],
        [3, 3, 2, 5],
        conv(2, false, 1),
        f,
        t,
    );
    check_conv(
        "same s2",
        fns!(c_same_s2),
        [7, 7, 3],
        [3, 3, 3, 2],
        conv(2, true, 1),
        f,
        t,
    );
    check_conv(
        "1 pixel",
        fns!(c_pixel),
        [1, 1, 1],
        [1, 1, 1, 1],
        conv(1, true, 1),
        f,
        t,
    );
    check_conv(
        "1 pixel k3",
        fns!(c_pixel_k3),
        [1, 1, 3],
        [3, 3, 3, 2],
        conv(2, true, 1),
        f,
        t,
    );
    check_conv(
        "dilated same",
        fns!(c_dil_same),
        [7, 7, 2],
        [3, 3, 2, 3],
        conv(1, true, 2),
        f,
        t,
    );
    check_conv(
        "dilated valid s2",
        fns!(c_dil_valid_s2),
        [9, 8, 2],
        [2, 3, 2, 3],
        conv(2, false, 2),
        f,
        t,
    );
    let f32_of = |v: f64| v as f32;
    check_conv(
        "f32 20x19x16",
        fns!(c_big_f32),
        [20, 19, 16],
        [3, 3, 16, 24],
        conv(2, true, 1),
        f32_of,
        1e-4,
    );
}

#[test]
fn depthwise_conv2d_input_and_filter_gradients() {
    let conv = |stride, same, dil| Conv {
        stride,
        same,
        dil,
        depthwise: true,
    };
    let f = |v: f64| v;
    let t = 1e-12;
    check_conv(
        "dw same s1",
        fns!(d_same_s1),
        [7, 7, 3],
        [3, 3, 3, 1],
        conv(1, true, 1),
        f,
        t,
    );
    check_conv(
        "dw valid s2",
        fns!(d_valid_s2),
        [7, 6, 2],
        [3, 3, 2, 2],
        conv(2, false, 1),
        f,
        t,
    );
    check_conv(
        "dw dilated",
        fns!(d_dil_same),
        [7, 7, 2],
        [3, 3, 2, 1],
        conv(1, true, 2),
        f,
        t,
    );
    check_conv(
        "dw 1 pixel",
        fns!(d_pixel),
        [1, 1, 2],
        [1, 1, 2, 3],
        conv(1, false, 1),
        f,
        t,
    );
    let f32_of = |v: f64| v as f32;
    check_conv(
        "dw f32 30x30x8",
        fns!(d_big_f32),
        [30, 30, 8],
        [3, 3, 8, 1],
        conv(2, true, 1),
        f32_of,
        1e-4,
    );
}

// ----- pooling --------------------------------------------------------------------------------

/// The naive pooling gradient: each window's `dy` to its first maximum, or spread / count.
fn ref_pool_grad(
    x: &ArrayD<f64>,
    dy: &ArrayD<f64>,
    k: usize,
    s: usize,
    same: bool,
    max: bool,
) -> ArrayD<f64> {
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (oh, pt) = out_pad(h, k, 1, s, same);
    let (ow, pl) = out_pad(w, k, 1, s, same);
    let mut dx = ArrayD::zeros(IxDyn(x.shape()));
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                for ch in 0..c {
                    let mut cells = Vec::new();
                    for di in 0..k {
                        for dj in 0..k {
                            let y = (i * s + di) as isize - pt as isize;
                            let xx = (j * s + dj) as isize - pl as isize;
                            if y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w {
                                cells.push([b, y as usize, xx as usize, ch]);
                            }
                        }
                    }
                    let d = dy[[b, i, j, ch]];
                    if max {
                        let mut best = cells[0];
                        for &cell in &cells {
                            if x[cell] > x[best] {
                                best = cell;
                            }
                        }
                        dx[best] += d;
                    } else {
                        for &cell in &cells {
                            dx[cell] += d / cells.len() as f64;
                        }
                    }
                }
            }
        }
    }
    dx
}

macro_rules! pool_case {
    ($name:ident, $op:ident, [$h:tt, $w:tt, $c:tt], [$oh:tt, $ow:tt], $k:tt, $s:tt, $pad:tt) => {
        #[graph]
        fn $name(
            x: Tensor<f64, B, $h, $w, $c>,
            dy: Tensor<f64, B, $oh, $ow, $c>,
        ) -> Tensor<f64, B, $h, $w, $c> {
            let y = $op(x, $k, $s, $pad);
            gradients(y, x, dy)
        }
    };
}

pool_case!(max_valid_2, max_pool2d, [7, 7, 3], [3, 3], 2, 2, VALID);
pool_case!(max_same_3s1, max_pool2d, [7, 7, 3], [7, 7], 3, 1, SAME);
pool_case!(max_same_3s2, max_pool2d, [7, 6, 2], [4, 3], 3, 2, SAME);
pool_case!(max_pixel, max_pool2d, [1, 1, 1], [1, 1], 3, 1, SAME);
pool_case!(avg_same_3s2, avg_pool2d, [7, 6, 2], [4, 3], 3, 2, SAME);
pool_case!(avg_valid_2, avg_pool2d, [7, 7, 2], [3, 3], 2, 2, VALID);
pool_case!(avg_same_3s1, avg_pool2d, [7, 7, 3], [7, 7], 3, 1, SAME);
pool_case!(avg_pixel, avg_pool2d, [1, 1, 1], [1, 1], 3, 2, SAME);

type Fn2 = fn(
    &grafo::ndarray::Array4<f64>,
    &grafo::ndarray::Array4<f64>,
) -> Result<grafo::ndarray::Array4<f64>, Error>;

fn check_pool(
    what: &str,
    fns: [Fn2; 3],
    hwc: [usize; 3],
    k: usize,
    s: usize,
    same: bool,
    max: bool,
) {
    let (oh, _) = out_pad(hwc[0], k, 1, s, same);
    let (ow, _) = out_pad(hwc[1], k, 1, s, same);
    for b in [0usize, 1, 3] {
        // Values on a coarse grid, so windows hold ties: the first maximum takes the gradient.
        let x = rand_i32(21 + b as u64, Ix4(b, hwc[0], hwc[1], hwc[2]), -3, 3).mapv(f64::from);
        let dy = rand_f64(22 + b as u64, Ix4(b, oh, ow, hwc[2]), -1.0, 1.0);
        let want = ref_pool_grad(
            &x.clone().into_dyn(),
            &dy.clone().into_dyn(),
            k,
            s,
            same,
            max,
        );
        let got: Vec<_> = fns.iter().map(|f| f(&x, &dy).unwrap()).collect();
        for (how, g) in ["compiled", "eager", "session"].iter().zip(&got) {
            assert_close_tol(&format!("{what} B={b} {how}"), g, &want, 1e-12, 1e-12);
            assert_bits(&format!("{what} B={b} {how} vs compiled"), g, &got[0]);
        }
    }
}

macro_rules! fns2 {
    ($f:ident) => {
        [
            |x, dy| $f(x, dy),
            |x, dy| $f::eager(x, dy),
            |x, dy| $f::run(&mut Session::default(), x, dy),
        ]
    };
}

#[test]
fn pooling_gradients() {
    check_pool(
        "max valid 2",
        fns2!(max_valid_2),
        [7, 7, 3],
        2,
        2,
        false,
        true,
    );
    check_pool(
        "max same 3/1",
        fns2!(max_same_3s1),
        [7, 7, 3],
        3,
        1,
        true,
        true,
    );
    check_pool(
        "max same 3/2",
        fns2!(max_same_3s2),
        [7, 6, 2],
        3,
        2,
        true,
        true,
    );
    check_pool("max 1 pixel", fns2!(max_pixel), [1, 1, 1], 3, 1, true, true);
    check_pool(
        "avg same 3/2",
        fns2!(avg_same_3s2),
        [7, 6, 2],
        3,
        2,
        true,
        false,
    );
    check_pool(
        "avg valid 2",
        fns2!(avg_valid_2),
        [7, 7, 2],
        2,
        2,
        false,
        false,
    );
    check_pool(
        "avg same 3/1",
        fns2!(avg_same_3s1),
        [7, 7, 3],
        3,
        1,
        true,
        false,
    );
    check_pool(
        "avg 1 pixel",
        fns2!(avg_pixel),
        [1, 1, 1],
        3,
        2,
        true,
        false,
    );
}

// ----- gather -------------------------------------------------------------------------------

#[graph]
fn gather_rows_grad(
    table: Tensor<f64, 7, 3>,
    ids: Tensor<i32, B>,
    dy: Tensor<f64, B, 3>,
) -> Tensor<f64, 7, 3> {
    let y = gather(table, ids, 0);
    gradients(y, table, dy)
}

#[graph]
fn gather_axis1_grad(
    x: Tensor<f64, 4, 5, 2>,
    ids: Tensor<i64, 3, 2>,
    dy: Tensor<f64, 4, 3, 2, 2>,
) -> Tensor<f64, 4, 5, 2> {
    let y = gather(x, ids, 1);
    gradients(y, x, dy)
}

/// The naive scatter-add: `dx[o, ids[j], i] += dy[o, j, i]`.
fn ref_scatter(shape: &[usize], axis: usize, ids: &[i64], dy: &[f64]) -> ArrayD<f64> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let len = shape[axis];
    let mut out = vec![0.0; outer * len * inner];
    for o in 0..outer {
        for (j, &id) in ids.iter().enumerate() {
            for i in 0..inner {
                out[(o * len + id as usize) * inner + i] += dy[(o * ids.len() + j) * inner + i];
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(shape), out).unwrap()
}

#[test]
fn gather_gradient_is_a_scatter_add() {
    let table = rand_f64(31, Ix2(7, 3), -1.0, 1.0);
    for b in [0usize, 1, 9] {
        // Repeated ids sum.
        let ids = grafo::ndarray::Array1::from_iter((0..b).map(|i| ((i * 5) % 7) as i32 % 4));
        let dy = rand_f64(32 + b as u64, Ix2(b, 3), -1.0, 1.0);
        let idv: Vec<i64> = ids.iter().map(|&v| v as i64).collect();
        let want = ref_scatter(&[7, 3], 0, &idv, &dy.iter().copied().collect::<Vec<_>>());
        let got = runs_ok!(gather_rows_grad(&table, &ids, &dy));
        for (how, g) in &got {
            assert_close_tol(&format!("gather rows B={b} {how}"), g, &want, 1e-12, 1e-12);
            assert_bits(&format!("gather rows B={b} {how}"), g, &got[0].1);
        }
    }
    let x = rand_f64(33, grafo::ndarray::Ix3(4, 5, 2), -1.0, 1.0);
    let ids = grafo::ndarray::Array2::from_shape_vec((3, 2), vec![4i64, 0, 4, 4, 1, 0]).unwrap();
    let dy = rand_f64(34, Ix4(4, 3, 2, 2), -1.0, 1.0);
    let want = ref_scatter(
        &[4, 5, 2],
        1,
        ids.as_slice().unwrap(),
        dy.as_slice().unwrap(),
    );
    let got = runs_ok!(gather_axis1_grad(&x, &ids, &dy));
    for (how, g) in &got {
        assert_close_tol(&format!("gather axis 1 {how}"), g, &want, 1e-12, 1e-12);
        assert_bits(&format!("gather axis 1 {how}"), g, &got[0].1);
    }
}

#[test]
fn gather_gradient_index_out_of_range_is_an_error() {
    let table = rand_f64(35, Ix2(7, 3), -1.0, 1.0);
    let dy = rand_f64(36, Ix2(2, 3), -1.0, 1.0);
    for bad in [7i32, -1] {
        let ids = grafo::ndarray::arr1(&[1, bad]);
        for (how, r) in runs!(gather_rows_grad(&table, &ids, &dy)) {
            assert!(r.is_err(), "index {bad} {how}: {r:?}");
        }
    }
}

// ----- conv2d_transpose ---------------------------------------------------------------------

macro_rules! transpose_case {
    ($name:ident, [$h:tt, $w:tt, $cin:tt], [$kh:tt, $kw:tt, $cout:tt], [$oh:tt, $ow:tt], $s:tt, $pad:tt) => {
        #[graph]
        fn $name(
            x: Tensor<f64, B, $h, $w, $cin>,
            k: Tensor<f64, $kh, $kw, $cout, $cin>,
        ) -> Tensor<f64, B, $oh, $ow, $cout> {
            conv2d_transpose(x, k, [B, $oh, $ow, $cout], $s, $pad)
        }
    };
}

transpose_case!(t_same_s2, [4, 4, 3], [3, 3, 2], [8, 8], 2, SAME);
transpose_case!(
    t_same_s2_odd,
    [4, 4, 3],
    [3, 3, 2],
    [7, 7],
    [1, 2, 2, 1],
    SAME
);
transpose_case!(t_valid_s2, [3, 2, 5], [3, 3, 2], [7, 6], [2, 2], VALID);
transpose_case!(t_same_s1, [7, 7, 4], [3, 3, 3], [7, 7], 1, SAME);
transpose_case!(t_pixel, [1, 1, 1], [1, 1, 1], [1, 1], 1, VALID);

/// (what, entry points, x's [H, W, in], k's [KH, KW, out], output [H', W'], stride, SAME).
type TransposeCase = (
    &'static str,
    [Fn2; 3],
    [usize; 3],
    [usize; 3],
    [usize; 2],
    usize,
    bool,
);

#[test]
fn conv2d_transpose_is_the_input_gradient() {
    let cases: [TransposeCase; 5] = [
        (
            "same s2",
            fns2!(t_same_s2),
            [4, 4, 3],
            [3, 3, 2],
            [8, 8],
            2,
            true,
        ),
        (
            "same s2 odd",
            fns2!(t_same_s2_odd),
            [4, 4, 3],
            [3, 3, 2],
            [7, 7],
            2,
            true,
        ),
        (
            "valid s2",
            fns2!(t_valid_s2),
            [3, 2, 5],
            [3, 3, 2],
            [7, 6],
            2,
            false,
        ),
        (
            "same s1",
            fns2!(t_same_s1),
            [7, 7, 4],
            [3, 3, 3],
            [7, 7],
            1,
            true,
        ),
        (
            "1 pixel",
            fns2!(t_pixel),
            [1, 1, 1],
            [1, 1, 1],
            [1, 1],
            1,
            false,
        ),
    ];
    for (what, fns, xs, ks, out, stride, same) in cases {
        for b in [0usize, 1, 2] {
            let x = rand_f64(41 + b as u64, Ix4(b, xs[0], xs[1], xs[2]), -1.0, 1.0);
            let k = rand_f64(42, Ix4(ks[0], ks[1], ks[2], xs[2]), -1.0, 1.0);
            // The conv2d this is the gradient of: input [b, out, cout], kernel k, output x.
            let c = Conv {
                stride,
                same,
                dil: 1,
                depthwise: false,
            };
            let zeros = ArrayD::zeros(IxDyn(&[b, out[0], out[1], ks[2]]));
            let (want, _) = ref_conv_grads(&zeros, &k.clone().into_dyn(), &x.clone().into_dyn(), c);
            let got: Vec<_> = fns.iter().map(|f| f(&x, &k).unwrap()).collect();
            for (how, g) in ["compiled", "eager", "session"].iter().zip(&got) {
                assert_close_tol(
                    &format!("conv2d_transpose {what} B={b} {how}"),
                    g,
                    &want,
                    1e-12,
                    1e-12,
                );
                assert_bits(&format!("conv2d_transpose {what} B={b} {how}"), g, &got[0]);
            }
        }
    }
    // The eager op outside a graph, as TF's `tf.nn.conv2d_transpose`.
    let x = rand_f64(43, Ix4(2, 4, 4, 3), -1.0, 1.0);
    let k = rand_f64(44, Ix4(3, 3, 2, 3), -1.0, 1.0);
    let direct = conv2d_transpose(&x, &k, &[2, 8, 8, 2], 2, SAME).unwrap();
    assert_bits(
        "eager conv2d_transpose",
        &direct,
        &t_same_s2(&x, &k).unwrap().into_dyn(),
    );
    let bad = conv2d_transpose(&x, &k, &[2, 9, 9, 2], 2, SAME);
    assert!(bad.is_err(), "{bad:?}");
}
