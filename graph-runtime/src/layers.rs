//! The parameter structs of grafo's layers library (`grafo::layers`): `Dense`, `Conv2d`,
//! `DepthwiseConv2d`, `BatchNorm`, `LayerNorm`, `Embedding`, `MultiHeadAttention`, `LstmCell`
//! and `GruCell`, with their fields named and initialised as Keras names and initialises them.
//!
//! Each is generic over its dims (`Dense<784, 512>`) and its float type (`f32` by default,
//! `Dense<784, 512, f64>`), and owns its arrays. Inside a `#[graph]` body the compiler knows
//! these structs (`graph-compiler/src/structs/layers.rs`) and the functions that apply them
//! (`dense(p.fc, x)`); outside, a user's parameter struct holding one calls the same
//! `__grafo_init`, `__grafo_read` and `__grafo_write` it calls on its own structs, so a field
//! `fc: Dense<4, 3>` initialises, saves and loads as `fc.kernel` and `fc.bias`. A layer also
//! initialises, saves and loads on its own (`Dense::<4, 3>::init(seed)`).

use crate::checkpoint::{CheckpointElem, Reader, Remap, Writer};
use crate::dtype::Float;
use crate::error::Error;
use crate::init::{Init, InitElem, Initializer};
use ndarray::{Array1, Array2, Array4};
use std::path::Path;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types of a layer's parameters: `f32` and `f64`.
pub trait LayerElem: Float + CheckpointElem + InitElem + sealed::Sealed {}
impl LayerElem for f32 {}
impl LayerElem for f64 {}

/// The tensor name of a field under `prefix` (`fc.` + `kernel`).
fn at(prefix: &str, field: &str) -> String {
    format!("{prefix}{field}")
}

/// `init`, `load_safetensors`, `load_safetensors_with` and `save_safetensors` of a layer on
/// its own, over its `__grafo_*` glue.
macro_rules! standalone {
    ($name:expr) => {
        /// This layer with every field drawn by its initialiser (Keras' definitions), each
        /// field's stream seeded from `seed` and the field's name.
        pub fn init(seed: u64) -> Self {
            Self::__grafo_init(&mut Init::new(seed), "")
        }

        /// Loads this layer from a safetensors file whose tensor names are its field names.
        pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Self, Error> {
            Self::load_safetensors_with(path, &Remap::new())
        }

        /// As `load_safetensors`, with the file's names and layouts mapped by `remap`.
        pub fn load_safetensors_with(path: impl AsRef<Path>, remap: &Remap) -> Result<Self, Error> {
            let mut r = Reader::open(path.as_ref(), $name, remap)?;
            let v = Self::__grafo_read(&mut r, "");
            r.finish()?;
            Ok(v)
        }

        /// Writes this layer as a safetensors file, each tensor named by its field.
        pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<(), Error> {
            let mut w = Writer::new();
            self.__grafo_write(&mut w, "");
            w.write(path.as_ref())
        }
    };
}

/// A layer whose fields are all tensors, each with its shape and initialiser.
macro_rules! layer {
    (
        $(#[$meta:meta])*
        $name:ident <$(const $g:ident),*> {
            $( $(#[$fmeta:meta])* $field:ident : $arr:ident = [$($dim:expr),*] => $init:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name<$(const $g: usize,)* T: LayerElem = f32> {
            $( $(#[$fmeta])* pub $field: $arr<T>, )*
        }

        impl<$(const $g: usize,)* T: LayerElem> $name<$($g,)* T> {
            standalone!(stringify!($name));

            #[doc(hidden)]
            pub fn __grafo_init(g: &mut Init, prefix: &str) -> Self {
                Self { $( $field: g.tensor(&at(prefix, stringify!($field)), &[$($dim),*], $init), )* }
            }

            #[doc(hidden)]
            pub fn __grafo_read(r: &mut Reader, prefix: &str) -> Self {
                Self { $( $field: r.take(&at(prefix, stringify!($field)), &[$($dim),*]), )* }
            }

            #[doc(hidden)]
            pub fn __grafo_write<'w>(&'w self, w: &mut Writer<'w>, prefix: &str) {
                $( w.add(at(prefix, stringify!($field)), &self.$field); )*
            }
        }
    };
}

layer! {
    /// A densely connected layer, Keras' `Dense(OUT)` on inputs of `IN` features (PyTorch's
    /// `Linear(IN, OUT)`, whose `weight` is this `kernel` transposed): `dense(p, x [, activation])`
    /// computes `activation(matmul(x, kernel) + bias)`.
    Dense<const IN, const OUT> {
        /// `[IN, OUT]`, `glorot_uniform`.
        kernel: Array2 = [IN, OUT] => Initializer::GlorotUniform,
        /// `[OUT]`, zeros.
        bias: Array1 = [OUT] => Initializer::Zeros,
    }
}

layer! {
    /// A 2-D convolution, Keras' `Conv2D(COUT, (KH, KW))` on NHWC inputs of `CIN` channels
    /// (PyTorch's `Conv2d(CIN, COUT, (KH, KW))`, whose OIHW `weight` is this HWIO `kernel`
    /// permuted): `conv2d(p, x [, strides, padding [, activation [, dilation_rate]]])`.
    Conv2d<const KH, const KW, const CIN, const COUT> {
        /// `[KH, KW, CIN, COUT]` (HWIO), `glorot_uniform`.
        kernel: Array4 = [KH, KW, CIN, COUT] => Initializer::GlorotUniform,
        /// `[COUT]`, zeros.
        bias: Array1 = [COUT] => Initializer::Zeros,
    }
}

layer! {
    /// A depthwise 2-D convolution, Keras' `DepthwiseConv2D((KH, KW), depth_multiplier=M)` on
    /// NHWC inputs of `C` channels, giving `C * M` channels (output channel `c * M + m`).
    DepthwiseConv2d<const KH, const KW, const C, const M> {
        /// `[KH, KW, C, M]`, `glorot_uniform`.
        depthwise_kernel: Array4 = [KH, KW, C, M] => Initializer::GlorotUniform,
        /// `[C * M]`, zeros.
        bias: Array1 = [C * M] => Initializer::Zeros,
    }
}

layer! {
    /// Batch normalisation at inference, Keras' `BatchNormalization()` over the last axis of
    /// `C` channels (PyTorch's `BatchNorm2d(C)`: `weight`, `bias`, `running_mean` and
    /// `running_var` are `gamma`, `beta`, `moving_mean` and `moving_variance`):
    /// `(x - moving_mean) / sqrt(moving_variance + epsilon) * gamma + beta`.
    BatchNorm<const C> {
        /// `[C]`, ones.
        gamma: Array1 = [C] => Initializer::Ones,
        /// `[C]`, zeros.
        beta: Array1 = [C] => Initializer::Zeros,
        /// `[C]`, zeros.
        moving_mean: Array1 = [C] => Initializer::Zeros,
        /// `[C]`, ones.
        moving_variance: Array1 = [C] => Initializer::Ones,
    }
}

layer! {
    /// Layer normalisation over the last axis of `D` features, Keras' `LayerNormalization()`
    /// (PyTorch's `LayerNorm(D)`: `weight` and `bias` are `gamma` and `beta`).
    LayerNorm<const D> {
        /// `[D]`, ones.
        gamma: Array1 = [D] => Initializer::Ones,
        /// `[D]`, zeros.
        beta: Array1 = [D] => Initializer::Zeros,
    }
}

layer! {
    /// A lookup table of `V` vectors of `D` values, Keras' `Embedding(V, D)` (PyTorch's
    /// `Embedding(V, D)`, whose `weight` is this `embeddings`).
    Embedding<const V, const D> {
        /// `[V, D]`, Keras' default `uniform(-0.05, 0.05)`.
        embeddings: Array2 = [V, D] => Initializer::Uniform { lo: -0.05, hi: 0.05 },
    }
}

/// Multi-head attention over `D` features in `H` heads of `D / H`, as Keras'
/// `MultiHeadAttention(num_heads=H, key_dim=D // H)` with its output projected back to `D`:
/// four dense projections, `query`, `key`, `value` and `output`, each `[D, D]` with a bias.
/// `D` must be a multiple of `H` (the compiler checks it where the type is written).
#[derive(Clone, Debug, PartialEq)]
pub struct MultiHeadAttention<const D: usize, const H: usize, T: LayerElem = f32> {
    pub query: Dense<D, D, T>,
    pub key: Dense<D, D, T>,
    pub value: Dense<D, D, T>,
    pub output: Dense<D, D, T>,
}

impl<const D: usize, const H: usize, T: LayerElem> MultiHeadAttention<D, H, T> {
    standalone!("MultiHeadAttention");

    #[doc(hidden)]
    pub fn __grafo_init(g: &mut Init, prefix: &str) -> Self {
        MultiHeadAttention {
            query: Dense::__grafo_init(g, &at(prefix, "query.")),
            key: Dense::__grafo_init(g, &at(prefix, "key.")),
            value: Dense::__grafo_init(g, &at(prefix, "value.")),
            output: Dense::__grafo_init(g, &at(prefix, "output.")),
        }
    }

    #[doc(hidden)]
    pub fn __grafo_read(r: &mut Reader, prefix: &str) -> Self {
        MultiHeadAttention {
            query: Dense::__grafo_read(r, &at(prefix, "query.")),
            key: Dense::__grafo_read(r, &at(prefix, "key.")),
            value: Dense::__grafo_read(r, &at(prefix, "value.")),
            output: Dense::__grafo_read(r, &at(prefix, "output.")),
        }
    }

    #[doc(hidden)]
    pub fn __grafo_write<'w>(&'w self, w: &mut Writer<'w>, prefix: &str) {
        self.query.__grafo_write(w, &at(prefix, "query."));
        self.key.__grafo_write(w, &at(prefix, "key."));
        self.value.__grafo_write(w, &at(prefix, "value."));
        self.output.__grafo_write(w, &at(prefix, "output."));
    }
}

/// One step of an LSTM, Keras' `LSTMCell(H)` on inputs of `IN` features: the four gates in
/// Keras' (and PyTorch's) order input, forget, cell, output, each a quarter of the last axis.
#[derive(Clone, Debug, PartialEq)]
pub struct LstmCell<const IN: usize, const H: usize, T: LayerElem = f32> {
    /// `[IN, 4H]`, `glorot_uniform`.
    pub kernel: Array2<T>,
    /// `[H, 4H]`, `orthogonal`.
    pub recurrent_kernel: Array2<T>,
    /// `[4H]`: zeros, but ones for the forget gate (Keras' `unit_forget_bias=True`).
    pub bias: Array1<T>,
}

impl<const IN: usize, const H: usize, T: LayerElem> LstmCell<IN, H, T> {
    standalone!("LstmCell");

    #[doc(hidden)]
    pub fn __grafo_init(g: &mut Init, prefix: &str) -> Self {
        let mut bias: Array1<T> = g.tensor(&at(prefix, "bias"), &[4 * H], Initializer::Zeros);
        bias.slice_mut(ndarray::s![H..2 * H])
            .fill(<T as InitElem>::from_f64(1.0));
        LstmCell {
            kernel: g.tensor(
                &at(prefix, "kernel"),
                &[IN, 4 * H],
                Initializer::GlorotUniform,
            ),
            recurrent_kernel: g.tensor(
                &at(prefix, "recurrent_kernel"),
                &[H, 4 * H],
                Initializer::Orthogonal { gain: 1.0 },
            ),
            bias,
        }
    }

    #[doc(hidden)]
    pub fn __grafo_read(r: &mut Reader, prefix: &str) -> Self {
        LstmCell {
            kernel: r.take(&at(prefix, "kernel"), &[IN, 4 * H]),
            recurrent_kernel: r.take(&at(prefix, "recurrent_kernel"), &[H, 4 * H]),
            bias: r.take(&at(prefix, "bias"), &[4 * H]),
        }
    }

    #[doc(hidden)]
    pub fn __grafo_write<'w>(&'w self, w: &mut Writer<'w>, prefix: &str) {
        w.add(at(prefix, "kernel"), &self.kernel);
        w.add(at(prefix, "recurrent_kernel"), &self.recurrent_kernel);
        w.add(at(prefix, "bias"), &self.bias);
    }
}

layer! {
    /// One step of a GRU, Keras' `GRUCell(H)` (TF 2's default `reset_after=True`, which is
    /// PyTorch's `GRUCell` formula) on inputs of `IN` features: the three gates in Keras' order
    /// update (z), reset (r), candidate (h), each a third of the last axis (PyTorch orders
    /// them r, z, n).
    GruCell<const IN, const H> {
        /// `[IN, 3H]`, `glorot_uniform`.
        kernel: Array2 = [IN, 3 * H] => Initializer::GlorotUniform,
        /// `[H, 3H]`, `orthogonal`.
        recurrent_kernel: Array2 = [H, 3 * H] => Initializer::Orthogonal { gain: 1.0 },
        /// `[2, 3H]`: row 0 the input bias, row 1 the recurrent bias; zeros.
        bias: Array2 = [2, 3 * H] => Initializer::Zeros,
    }
}
