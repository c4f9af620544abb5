//! Shared helpers of the linalg kernel tests: a deterministic generator, naive f64 references and tolerant comparisons.

#![allow(dead_code)]

use graph_runtime::conv::{conv2d_output_hw, Padding};
use graph_runtime::Numeric;

/// A tiny deterministic generator (xorshift), so failures reproduce without a seed dance.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Small values: integers in -4..=4 for integer types, multiples of 1/8 in [-1, 1] for floats.
    pub fn values<T: Numeric>(&mut self, len: usize) -> Vec<T> {
        let int = T::from_f64(0.5) == T::ZERO;
        (0..len)
            .map(|_| {
                let v = self.below(17) as f64 - 8.0;
                T::from_f64(if int { v / 2.0 } else { v / 8.0 })
            })
            .collect()
    }

    /// A random permutation of `0..n`.
    pub fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below(i + 1));
        }
        p
    }
}

/// Naive `[m, k] x [k, n]` in f64, with plain loops.
pub fn naive_matmul<T: Numeric>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for p in 0..k {
                s += a[i * k + p].to_f64() * b[p * n + j].to_f64();
            }
            out[i * n + j] = s;
        }
    }
    out
}

/// Naive NHWC x HWIO convolution in f64, padding as TensorFlow.
pub fn naive_conv2d<T: Numeric>(
    x: &[T],
    xs: [usize; 4],
    k: &[T],
    ks: [usize; 4],
    stride: usize,
    padding: Padding,
) -> Vec<f64> {
    let [n, h, w, cin] = xs;
    let [kh, kw, _, cout] = ks;
    let (oh, ow) = conv2d_output_hw(h, w, kh, kw, stride, padding).expect("valid geometry");
    let (pt, pl) = match padding {
        Padding::Valid => (0, 0),
        Padding::Same => (
            ((oh - 1) * stride + kh).saturating_sub(h) / 2,
            ((ow - 1) * stride + kw).saturating_sub(w) / 2,
        ),
    };
    let mut out = vec![0.0; n * oh * ow * cout];
    for b in 0..n {
        for y in 0..oh {
            for xo in 0..ow {
                for co in 0..cout {
                    let mut s = 0.0;
                    for i in 0..kh {
                        for j in 0..kw {
                            let iy = (y * stride + i) as isize - pt as isize;
                            let ix = (xo * stride + j) as isize - pl as isize;
                            if iy < 0 || ix < 0 || iy as usize >= h || ix as usize >= w {
                                continue;
                            }
                            for c in 0..cin {
                                let xv = x[((b * h + iy as usize) * w + ix as usize) * cin + c];
                                let kv = k[((i * kw + j) * cin + c) * cout + co];
                                s += xv.to_f64() * kv.to_f64();
                            }
                        }
                    }
                    out[((b * oh + y) * ow + xo) * cout + co] = s;
                }
            }
        }
    }
    out
}

/// Asserts `got` matches the f64 reference: exactly for integers, within `tol` (relative to `scale`) for floats.
pub fn assert_close<T: Numeric>(got: &[T], want: &[f64], scale: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = if T::from_f64(0.5) == T::ZERO {
        0.0
    } else if std::mem::size_of::<T>() == 4 {
        1e-5 * scale.max(1.0)
    } else {
        1e-12 * scale.max(1.0)
    };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= tol || (g.is_nan() && w.is_nan()),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}
