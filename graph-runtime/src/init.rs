//! Initialisers of parameter structs (`Net::init(seed)`), defined as Keras defines them, drawn
//! reproducibly: each field from its own ChaCha8 stream, keyed by the seed and the field's path.
//!
//! Keras' definitions (`keras.initializers`), with `fan_in` and `fan_out` as Keras computes
//! them ([`fans`]: a dense kernel `[in, out]` has `in` and `out`; a convolution kernel (HWIO)
//! multiplies both by its receptive field `h * w`):
//!
//! | initialiser | draws |
//! |---|---|
//! | `glorot_uniform` (Keras' default kernel) | U(-l, l), l = sqrt(6 / (fan_in + fan_out)) |
//! | `glorot_normal` | truncated normal, stddev sqrt(2 / (fan_in + fan_out)) / 0.8796 |
//! | `he_normal` | truncated normal, stddev sqrt(2 / fan_in) / 0.8796 |
//! | `he_uniform` | U(-l, l), l = sqrt(6 / fan_in) |
//! | `lecun_normal` | truncated normal, stddev sqrt(1 / fan_in) / 0.8796 |
//! | `lecun_uniform` | U(-l, l), l = sqrt(3 / fan_in) |
//! | `random_normal(mean, stddev)` | N(mean, stddev), Keras' default (0, 0.05) |
//! | `truncated_normal(mean, stddev)` | N(mean, stddev) re-drawn beyond 2 stddev, default (0, 0.05) |
//! | `uniform(lo, hi)` | U(lo, hi), Keras' `RandomUniform`, default (-0.05, 0.05) |
//! | `zeros`, `ones`, `constant(v)` | the constant |
//! | `orthogonal(gain)` | Keras' `Orthogonal`: the Q of a normal matrix's QR, times `gain` (default 1) |
//!
//! The truncated normals are re-drawn beyond two standard deviations, as TensorFlow's
//! `truncated_normal` does; the variance-scaling ones (`glorot_normal`, `he_normal`,
//! `lecun_normal`) divide their stddev by 0.87962566103423978, the stddev of a standard normal
//! truncated to [-2, 2], as Keras' `VarianceScaling` does, so that the values drawn have the
//! stddev the scaling asks for (sqrt(2 / fan_in) for `he_normal`).

use ndarray::{Array, Dimension, IxDyn};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal, Uniform};

/// The stddev of a standard normal truncated to [-2, 2] (Keras' `VarianceScaling` constant).
pub const TRUNCATED_STDDEV: f64 = 0.879_625_661_034_239_8;

/// An initialiser, as `#[init(...)]` names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Initializer {
    Zeros,
    Ones,
    Constant(f64),
    GlorotUniform,
    GlorotNormal,
    HeNormal,
    HeUniform,
    LecunNormal,
    LecunUniform,
    RandomNormal {
        mean: f64,
        stddev: f64,
    },
    TruncatedNormal {
        mean: f64,
        stddev: f64,
    },
    Uniform {
        lo: f64,
        hi: f64,
    },
    /// Keras' `Orthogonal(gain)`: the shape flattened to `[rows, cols]` (`cols` the last
    /// axis), the orthonormal factor Q of the QR decomposition of a standard normal matrix
    /// (`[max, min]` of the two, transposed when there are fewer rows than columns), with
    /// R's diagonal made positive, times `gain`. Keras' default of recurrent kernels.
    Orthogonal {
        gain: f64,
    },
}

/// Keras' `fan_in` and `fan_out` of a weight of this shape: rank 0 is (1, 1); rank 1 is
/// (n, n); rank 2 `[in, out]`; higher ranks are convolution kernels, `[..receptive, in, out]`,
/// whose fans are `in` and `out` times the receptive field's size.
pub fn fans(shape: &[usize]) -> (f64, f64) {
    match shape {
        [] => (1.0, 1.0),
        [n] => (*n as f64, *n as f64),
        [i, o] => (*i as f64, *o as f64),
        [receptive @ .., i, o] => {
            let r: usize = receptive.iter().product();
            ((r * i) as f64, (r * o) as f64)
        }
    }
}

/// Keras' `VarianceScaling` mode: which fan the scale is divided by.
#[derive(Clone, Copy)]
enum Fan {
    In,
    Avg,
}

/// The element types an initialiser writes.
pub trait InitElem: Copy {
    fn from_f64(v: f64) -> Self;
}

macro_rules! init_numbers {
    ($($t:ty),*) => {$(
        impl InitElem for $t {
            #[inline]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    )*};
}
init_numbers!(f32, f64, i32, i64);

impl InitElem for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}

/// The draw of a standard normal truncated to [-2, 2]: values beyond are re-drawn.
fn truncated(rng: &mut ChaCha8Rng) -> f64 {
    loop {
        let z: f64 = StandardNormal.sample(rng);
        if z.abs() <= 2.0 {
            return z;
        }
    }
}

/// FNV-1a of a field path: the stream of that field's generator.
fn stream_of(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `n` values drawn by `init` for a tensor of `shape` from `rng`.
pub fn sample(init: Initializer, shape: &[usize], rng: &mut ChaCha8Rng) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let (fan_in, fan_out) = fans(shape);
    let scaled = |scale: f64, fan: Fan| {
        let n = match fan {
            Fan::In => fan_in,
            Fan::Avg => (fan_in + fan_out) / 2.0,
        };
        scale / n.max(1.0)
    };
    let uniform = |rng: &mut ChaCha8Rng, lo: f64, hi: f64| -> Vec<f64> {
        let u = Uniform::new(lo, hi).expect("a non-empty finite range");
        (0..n).map(|_| u.sample(&mut *rng)).collect()
    };
    let truncated_normal = |rng: &mut ChaCha8Rng, mean: f64, stddev: f64| -> Vec<f64> {
        (0..n).map(|_| mean + stddev * truncated(rng)).collect()
    };
    let scaling_uniform = |rng: &mut ChaCha8Rng, scale: f64, fan: Fan| {
        let limit = (3.0 * scaled(scale, fan)).sqrt();
        uniform(rng, -limit, limit)
    };
    let scaling_normal = |rng: &mut ChaCha8Rng, scale: f64, fan: Fan| {
        let stddev = scaled(scale, fan).sqrt() / TRUNCATED_STDDEV;
        truncated_normal(rng, 0.0, stddev)
    };
    match init {
        Initializer::Zeros => vec![0.0; n],
        Initializer::Ones => vec![1.0; n],
        Initializer::Constant(v) => vec![v; n],
        Initializer::GlorotUniform => scaling_uniform(rng, 1.0, Fan::Avg),
        Initializer::GlorotNormal => scaling_normal(rng, 1.0, Fan::Avg),
        Initializer::HeNormal => scaling_normal(rng, 2.0, Fan::In),
        Initializer::HeUniform => scaling_uniform(rng, 2.0, Fan::In),
        Initializer::LecunNormal => scaling_normal(rng, 1.0, Fan::In),
        Initializer::LecunUniform => scaling_uniform(rng, 1.0, Fan::In),
        Initializer::RandomNormal { mean, stddev } => (0..n)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut *rng);
                mean + stddev * z
            })
            .collect(),
        Initializer::TruncatedNormal { mean, stddev } => truncated_normal(rng, mean, stddev),
        Initializer::Uniform { lo, hi } => uniform(rng, lo, hi),
        Initializer::Orthogonal { gain } => orthogonal(shape, gain, rng),
    }
}

/// Keras' `Orthogonal` initialiser: for a shape flattened to `[rows, cols]`, a standard
/// normal `[max(rows, cols), min(rows, cols)]` matrix `a` is factored `a = QR` with R's
/// diagonal positive (as Keras' `q * sign(diag(r))` makes it), and Q (transposed when
/// `rows < cols`) times `gain` is the result: its rows (or columns) are orthonormal. The
/// factorisation is Gram-Schmidt's, run twice per column for accuracy; with R's diagonal
/// positive the factor is the one a Householder QR gives.
fn orthogonal(shape: &[usize], gain: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let cols = shape.last().copied().unwrap_or(1);
    let rows = n / cols;
    let (m, k) = (rows.max(cols), rows.min(cols));
    // `a` column by column: column j is a[.., j], drawn row by row as Keras' normal draws fill
    // the [m, k] matrix in row-major order.
    let draws: Vec<f64> = (0..m * k)
        .map(|_| StandardNormal.sample(&mut *rng))
        .collect();
    let mut q: Vec<Vec<f64>> = (0..k)
        .map(|j| (0..m).map(|i| draws[i * k + j]).collect())
        .collect();
    for j in 0..k {
        let (done, rest) = q.split_at_mut(j);
        let col = &mut rest[0];
        for _ in 0..2 {
            for p in done.iter() {
                let dot: f64 = p.iter().zip(col.iter()).map(|(a, b)| a * b).sum();
                for (v, u) in col.iter_mut().zip(p) {
                    *v -= dot * u;
                }
            }
        }
        let norm = col.iter().map(|v| v * v).sum::<f64>().sqrt();
        for v in col.iter_mut() {
            *v /= norm;
        }
    }
    // Q is [m, k]; the result is Q itself ([rows, cols] when rows >= cols) or its transpose.
    let mut out = vec![0.0; n];
    for r in 0..rows {
        for c in 0..cols {
            let v = if rows >= cols { q[c][r] } else { q[r][c] };
            out[r * cols + c] = gain * v;
        }
    }
    out
}

/// The initialisation of one parameter struct: the seed every field's stream is keyed by.
pub struct Init {
    seed: u64,
}

impl Init {
    pub fn new(seed: u64) -> Init {
        Init { seed }
    }

    /// The generator of the field `path`: ChaCha8 keyed by the seed, on the stream of the
    /// path's hash, so each field's values depend only on the seed and its path (adding a
    /// field leaves the others as they were).
    pub fn rng(&self, path: &str) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(stream_of(path));
        rng
    }

    /// The field `path`'s tensor of `shape`, drawn by `init`.
    pub fn tensor<T: InitElem, D: Dimension>(
        &mut self,
        path: &str,
        shape: &[usize],
        init: Initializer,
    ) -> Array<T, D> {
        let values = sample(init, shape, &mut self.rng(path));
        Array::from_shape_vec(IxDyn(shape), values.into_iter().map(T::from_f64).collect())
            .expect("as many values as the shape holds")
            .into_dimensionality::<D>()
            .expect("the field's rank")
    }
}
