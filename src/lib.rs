//! grafo: an ahead-of-time graph compiler for tensor functions.
//!
//! `#[graph]` turns an annotated Rust function over tensors into a statically scheduled,
//! fused computation while `cargo build` runs. Shapes and dtypes are checked at compile
//! time; the emitted code calls the parallel kernels of `graph-runtime`.
//! See `README.md`, `docs/OPS.md` (the op reference) and `docs/LANGUAGE-NOTES.md` for the language.

pub use graph_macro::graph;
/// Parameter structs' checkpoints: [`checkpoint::Remap`] maps another framework's tensor
/// names and layouts onto the field paths (`Net::load_safetensors_with(path, &remap)`).
pub use graph_runtime::checkpoint;
pub use graph_runtime::eager;
/// The initialisers of `#[init(...)]`, as Keras defines them (`Net::init(seed)`).
pub use graph_runtime::init;
/// The layers library: parameter structs (`Dense<IN, OUT>`, `Conv2d<KH, KW, CIN, COUT>`, ...)
/// that a `#[graph] mod`'s struct holds as fields, applied in a body by `dense(p.fc, x)`,
/// `conv2d(p.conv1, x, 1, SAME, relu)`, ... (`docs/LANGUAGE.md`, "Layers").
pub use graph_runtime::layers;
pub use graph_runtime::profile::ProfileReport;
pub use graph_runtime::session::{Session, SessionConfig};
pub use graph_runtime::tensorboard::EventWriter;
pub use graph_runtime::{
    BufferDef, CondDef, DType, Dim, GraphDef, GroupDef, InputDef, NodeDef, Region, Role,
};
pub use graph_runtime::{Element, Error, Float, Numeric};
pub use ndarray;

/// Everything a `#[graph]` user needs: the macro, `Tensor`, the op names and ndarray's array types.
pub mod prelude {
    pub use crate::graph;
    pub use crate::layers::{
        BatchNorm, Conv2d, Dense, DepthwiseConv2d, Embedding, GruCell, LayerNorm, LstmCell,
        MultiHeadAttention,
    };
    pub use crate::ops::*;
    pub use crate::{Error, Session, SessionConfig};
    pub use ndarray::{
        arr0, arr1, arr2, arr3, Array, Array0, Array1, Array2, Array3, Array4, Array5, ArrayD,
        ArrayView, ArrayView0, ArrayView1, ArrayView2, ArrayView3, ArrayView4, ArrayViewD, Axis,
    };
    /// ndarray's slicing macro and `NewAxis`: `x.slice(s![.., 0])` on arrays, and
    /// `x[s![.., t, 0..10;2]]` in a `#[graph]` body, which means what it means on an array.
    pub use ndarray::{s, NewAxis};
}

pub mod ops;

/// Items the code emitted by `#[graph]` refers to; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use graph_runtime::multiversion;
    pub use graph_runtime::*;
    pub use ndarray;
    pub use rayon;
}
