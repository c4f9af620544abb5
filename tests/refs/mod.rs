//! Naive references (plain loops, f64 accumulation) and comparison helpers for the
//! `#[graph]` end-to-end tests (workloads, seeds, entry checks, control flow, ops).
#![allow(dead_code)]

use grafo::ndarray::{Array, ArrayD, ArrayView, Dimension, IxDyn};

/// Element types the tests compare as f64.
pub trait AsF64: Copy {
    fn as_f64(self) -> f64;
}
impl AsF64 for f32 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl AsF64 for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}
impl AsF64 for i32 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl AsF64 for i64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl AsF64 for bool {
    fn as_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
}

pub const RTOL: f64 = 1e-4;
pub const ATOL: f64 = 1e-5;

fn close_one(g: f64, w: f64, rtol: f64, atol: f64) -> bool {
    if w.is_nan() {
        return g.is_nan();
    }
    if w.is_infinite() {
        return g == w;
    }
    (g - w).abs() <= atol + rtol * w.abs()
}

/// Asserts `got` has shape `shape` and matches `want` elementwise (NaN == NaN, inf == inf).
pub fn assert_close_tol<T: AsF64, D: Dimension>(
    what: &str,
    got: &Array<T, D>,
    want: &ArrayD<f64>,
    rtol: f64,
    atol: f64,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let mut bad = 0;
    let mut first = String::new();
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        let g = g.as_f64();
        if !close_one(g, *w, rtol, atol) {
            if bad == 0 {
                first = format!("flat index {i}: got {g}, want {w}");
            }
            bad += 1;
        }
    }
    assert!(
        bad == 0,
        "{what}: {bad} of {} elements differ; first at {first}",
        want.len()
    );
}

pub fn assert_close<T: AsF64, D: Dimension>(what: &str, got: &Array<T, D>, want: &ArrayD<f64>) {
    assert_close_tol(what, got, want, RTOL, ATOL)
}

/// Exact equality (integers, bools), shapes included.
pub fn assert_exact<T: AsF64, D: Dimension>(what: &str, got: &Array<T, D>, want: &ArrayD<f64>) {
    assert_close_tol(what, got, want, 0.0, 0.0)
}

/// The f64 copy of an array, as a dynamic-rank array.
pub fn to_f64<T: AsF64, D: Dimension>(a: &Array<T, D>) -> ArrayD<f64> {
    a.map(|v| v.as_f64()).into_dyn()
}

pub fn view_f64<T: AsF64, D: Dimension>(a: &ArrayView<T, D>) -> ArrayD<f64> {
    a.map(|v| v.as_f64()).into_dyn()
}

/// Deterministic uniform values in [lo, hi) (an LCG, seeded).
pub fn uniform(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((s >> 40) as f64) / ((1u64 << 24) as f64);
            lo + (hi - lo) * u as f32
        })
        .collect()
}

pub fn rand_arr<D: Dimension>(seed: u64, shape: D, lo: f32, hi: f32) -> Array<f32, D> {
    let n = shape.size();
    Array::from_shape_vec(shape, uniform(seed, n, lo, hi)).unwrap()
}

pub fn rand_f64<D: Dimension>(seed: u64, shape: D, lo: f32, hi: f32) -> Array<f64, D> {
    rand_arr(seed, shape, lo, hi).mapv(|v| v as f64)
}

pub fn rand_i32<D: Dimension>(seed: u64, shape: D, lo: i32, hi: i32) -> Array<i32, D> {
    let n = shape.size();
    let v = uniform(seed, n, 0.0, 1.0)
        .into_iter()
        .map(|u| lo + ((hi - lo) as f32 * u) as i32)
        .collect();
    Array::from_shape_vec(shape, v).unwrap()
}

// ----- naive references ---------------------------------------------------------------------

/// NumPy broadcasting of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r {
                a[i + a.len() - r]
            } else {
                1
            };
            let db = if i + b.len() >= r {
                b[i + b.len() - r]
            } else {
                1
            };
            assert!(da == db || da == 1 || db == 1, "bad broadcast {a:?} {b:?}");
            if da == 1 {
                db
            } else {
                da
            }
        })
        .collect()
}

fn bindex(idx: &[usize], shape: &[usize]) -> Vec<usize> {
    let off = idx.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if d == 1 { 0 } else { idx[off + i] })
        .collect()
}

/// Elementwise binary op with broadcasting.
pub fn zip2(a: &ArrayD<f64>, b: &ArrayD<f64>, f: impl Fn(f64, f64) -> f64) -> ArrayD<f64> {
    let s = broadcast_shape(a.shape(), b.shape());
    ArrayD::from_shape_fn(IxDyn(&s), |ix| {
        let ix = ix.slice().to_vec();
        f(
            a[IxDyn(&bindex(&ix, a.shape()))],
            b[IxDyn(&bindex(&ix, b.shape()))],
        )
    })
}

pub fn zip3(
    c: &ArrayD<f64>,
    a: &ArrayD<f64>,
    b: &ArrayD<f64>,
    f: impl Fn(f64, f64, f64) -> f64,
) -> ArrayD<f64> {
    let s = broadcast_shape(&broadcast_shape(c.shape(), a.shape()), b.shape());
    ArrayD::from_shape_fn(IxDyn(&s), |ix| {
        let ix = ix.slice().to_vec();
        f(
            c[IxDyn(&bindex(&ix, c.shape()))],
            a[IxDyn(&bindex(&ix, a.shape()))],
            b[IxDyn(&bindex(&ix, b.shape()))],
        )
    })
}

pub fn map1(a: &ArrayD<f64>, f: impl Fn(f64) -> f64) -> ArrayD<f64> {
    a.mapv(f)
}

/// Reduction over `axes` (already non-negative) with f64 accumulation.
pub fn ref_reduce(a: &ArrayD<f64>, axes: &[usize], keep: bool, kind: &str) -> ArrayD<f64> {
    let shape = a.shape().to_vec();
    let kept: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let mut acc = ArrayD::from_elem(
        IxDyn(&kept),
        match kind {
            "max" => f64::NEG_INFINITY,
            "min" => f64::INFINITY,
            _ => 0.0,
        },
    );
    let mut count = 1usize;
    for &ax in axes {
        count *= shape[ax];
    }
    for (ix, &v) in a.indexed_iter() {
        let ix: Vec<usize> = ix
            .slice()
            .iter()
            .enumerate()
            .map(|(i, &k)| if axes.contains(&i) { 0 } else { k })
            .collect();
        let slot = &mut acc[IxDyn(&ix)];
        *slot = match kind {
            "max" => {
                if v.is_nan() || slot.is_nan() {
                    f64::NAN
                } else {
                    slot.max(v)
                }
            }
            "min" => {
                if v.is_nan() || slot.is_nan() {
                    f64::NAN
                } else {
                    slot.min(v)
                }
            }
            _ => *slot + v,
        };
    }
    if kind == "mean" {
        acc.mapv_inplace(|v| v / count as f64);
    }
    if keep {
        acc
    } else {
        let out: Vec<usize> = shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &d)| d)
            .collect();
        acc.into_shape_with_order(IxDyn(&out)).unwrap()
    }
}

pub fn ref_norm(a: &ArrayD<f64>) -> f64 {
    a.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Softmax (or log-softmax) along `axis`.
pub fn ref_softmax(a: &ArrayD<f64>, axis: usize, log: bool) -> ArrayD<f64> {
    let mx = ref_reduce(a, &[axis], true, "max");
    let e = zip2(a, &mx, |x, m| (x - m).exp());
    let s = ref_reduce(&e, &[axis], true, "sum");
    if log {
        let ls = s.mapv(f64::ln);
        let sh = zip2(a, &mx, |x, m| x - m);
        zip2(&sh, &ls, |x, l| x - l)
    } else {
        zip2(&e, &s, |x, s| x / s)
    }
}

/// 2-D matmul, or batched 3-D (with a 2-D right operand broadcast over the batch).
pub fn ref_matmul(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    match (a.ndim(), b.ndim()) {
        (2, 2) => {
            let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
            assert_eq!(k, b.shape()[0]);
            let av: Vec<f64> = a.iter().copied().collect();
            let bv: Vec<f64> = b.iter().copied().collect();
            let mut out = vec![0.0f64; m * n];
            for i in 0..m {
                for p in 0..k {
                    let x = av[i * k + p];
                    let brow = &bv[p * n..p * n + n];
                    let orow = &mut out[i * n..i * n + n];
                    for j in 0..n {
                        orow[j] += x * brow[j];
                    }
                }
            }
            ArrayD::from_shape_vec(IxDyn(&[m, n]), out).unwrap()
        }
        (3, 3) => {
            let (bs, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
            let bb = b.shape()[0];
            ArrayD::from_shape_fn(IxDyn(&[bs, m, n]), |ix| {
                let j = if bb == 1 { 0 } else { ix[0] };
                (0..k)
                    .map(|p| a[[ix[0], ix[1], p]] * b[[j, p, ix[2]]])
                    .sum()
            })
        }
        (3, 2) => {
            let (bs, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[1]);
            ArrayD::from_shape_fn(IxDyn(&[bs, m, n]), |ix| {
                (0..k).map(|p| a[[ix[0], ix[1], p]] * b[[p, ix[2]]]).sum()
            })
        }
        other => panic!("matmul ranks {other:?}"),
    }
}

pub fn ref_transpose(a: &ArrayD<f64>, perm: &[usize]) -> ArrayD<f64> {
    a.view().permuted_axes(IxDyn(perm)).to_owned()
}

/// NHWC input, HWIO kernel, TensorFlow's SAME/VALID padding.
pub fn ref_conv2d(x: &ArrayD<f64>, k: &ArrayD<f64>, stride: usize, same: bool) -> ArrayD<f64> {
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (kh, kw, kc, o) = (k.shape()[0], k.shape()[1], k.shape()[2], k.shape()[3]);
    assert_eq!(c, kc);
    let (oh, ow, ph, pw) = if same {
        let oh = h.div_ceil(stride);
        let ow = w.div_ceil(stride);
        let pth = ((oh.max(1) - 1) * stride + kh).saturating_sub(h);
        let ptw = ((ow.max(1) - 1) * stride + kw).saturating_sub(w);
        (oh, ow, pth / 2, ptw / 2)
    } else {
        ((h - kh) / stride + 1, (w - kw) / stride + 1, 0, 0)
    };
    let xv: Vec<f64> = x.iter().copied().collect();
    let kv: Vec<f64> = k.iter().copied().collect();
    let mut out = vec![0.0f64; n * oh * ow * o];
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                let orow = &mut out[((b * oh + i) * ow + j) * o..((b * oh + i) * ow + j + 1) * o];
                for di in 0..kh {
                    let yi = (i * stride + di) as isize - ph as isize;
                    if yi < 0 || yi >= h as isize {
                        continue;
                    }
                    for dj in 0..kw {
                        let xj = (j * stride + dj) as isize - pw as isize;
                        if xj < 0 || xj >= w as isize {
                            continue;
                        }
                        let xoff = ((b * h + yi as usize) * w + xj as usize) * c;
                        for ch in 0..c {
                            let xval = xv[xoff + ch];
                            let krow = &kv
                                [((di * kw + dj) * c + ch) * o..((di * kw + dj) * c + ch + 1) * o];
                            for f in 0..o {
                                orow[f] += xval * krow[f];
                            }
                        }
                    }
                }
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[n, oh, ow, o]), out).unwrap()
}

/// TF's pooling written out directly: output size and padding per axis, then each window's
/// valid elements (max, or sum / count).
pub fn ref_pool(
    x: &ArrayD<f64>,
    k: [usize; 2],
    s: [usize; 2],
    same: bool,
    max: bool,
) -> ArrayD<f64> {
    let sh = x.shape();
    let (n, h, w, c) = (sh[0], sh[1], sh[2], sh[3]);
    let axis = |len: usize, k: usize, s: usize| -> (usize, usize) {
        if same {
            let out = len.div_ceil(s);
            let total = ((out.max(1) - 1) * s + k).saturating_sub(len);
            (out, total / 2)
        } else {
            // TF: (in - k + stride) / stride, truncated toward zero.
            (
                ((len as isize - k as isize + s as isize) / s as isize) as usize,
                0,
            )
        }
    };
    let ((oh, pt), (ow, pl)) = (axis(h, k[0], s[0]), axis(w, k[1], s[1]));
    ArrayD::from_shape_fn(IxDyn(&[n, oh, ow, c]), |ix| {
        let mut vals = Vec::new();
        for di in 0..k[0] {
            for dj in 0..k[1] {
                let y = (ix[1] * s[0] + di) as isize - pt as isize;
                let xx = (ix[2] * s[1] + dj) as isize - pl as isize;
                if y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w {
                    vals.push(x[[ix[0], y as usize, xx as usize, ix[3]]]);
                }
            }
        }
        if max {
            vals.iter().copied().fold(f64::NEG_INFINITY, |a, v| {
                if a.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    a.max(v)
                }
            })
        } else {
            vals.iter().sum::<f64>() / vals.len() as f64
        }
    })
}

pub fn ref_relu(v: f64) -> f64 {
    if v < 0.0 {
        0.0
    } else {
        v
    }
}

pub fn ref_gelu(v: f64) -> f64 {
    0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh())
}
