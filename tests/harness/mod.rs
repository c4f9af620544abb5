//! Shared test harness for the kernel tests: naive reference kernels, operand layouts and ulp distances.
#![allow(dead_code)]

use graph_runtime::Error;
pub use ndarray::Dimension;
use ndarray::{ArrayD, IxDyn, ShapeBuilder};

/// The sizes every op is checked on.
pub const SIZES: [usize; 5] = [0, 1, 7, 1023, 4097];

/// Distance in representable f32 values between `a` and `b` (0 when both are NaN or equal).
pub fn ulp_f32(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f32| -> i64 {
        let b = x.to_bits() as i32 as i64;
        if b < 0 {
            i64::from(i32::MIN) - b
        } else {
            b
        }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// A deterministic pseudo-random generator (xorshift), so tests need no extra crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// An array of `shape` filled with values in [lo, hi).
pub fn random_f64(shape: &[usize], lo: f64, hi: f64, seed: u64) -> ArrayD<f64> {
    let mut rng = Rng::new(seed);
    ArrayD::from_shape_fn(IxDyn(shape), |_| rng.uniform(lo, hi))
}

/// The same data in column-major (transposed-strides) layout, to exercise strided views.
pub fn fortran<T: Clone>(x: &ArrayD<T>) -> ArrayD<T> {
    let mut f = ArrayD::from_shape_vec(IxDyn(x.shape()).f(), x.iter().cloned().collect::<Vec<_>>())
        .unwrap();
    f.assign(x);
    f
}

/// NumPy broadcasting, the naive way.
pub fn ref_broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// Reads `x` at the multi-index `idx` of a broadcast result (trailing alignment, size-1 axes repeat).
pub fn ref_at<T: Copy>(x: &ArrayD<T>, idx: &[usize]) -> T {
    let off = idx.len() - x.ndim();
    let i: Vec<usize> = (0..x.ndim())
        .map(|k| if x.shape()[k] == 1 { 0 } else { idx[off + k] })
        .collect();
    x[IxDyn(&i)]
}

/// The naive broadcasting binary map: plain loops over the result's indices.
pub fn ref_binary<A: Copy, B: Copy, O>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    f: impl Fn(A, B) -> O,
) -> ArrayD<O> {
    let shape = ref_broadcast_shape(a.shape(), b.shape()).expect("broadcastable");
    ArrayD::from_shape_fn(IxDyn(&shape), |i| {
        f(ref_at(a, i.slice()), ref_at(b, i.slice()))
    })
}

/// Asserts `r` is a shape error naming `op` and both shapes.
pub fn assert_shape_error<T: std::fmt::Debug>(
    r: Result<T, Error>,
    op: &str,
    left: &[usize],
    right: &[usize],
) {
    match r {
        Err(e @ Error::Shape { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(op), "{msg} does not name {op}");
            assert!(
                msg.contains(&format!("{left:?}")),
                "{msg} does not name {left:?}"
            );
            assert!(
                msg.contains(&format!("{right:?}")),
                "{msg} does not name {right:?}"
            );
        }
        other => panic!("expected a shape error from {op}, got {other:?}"),
    }
}

/// Asserts two f64 values agree within a relative tolerance (NaNs agree, infinities must be equal).
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}
