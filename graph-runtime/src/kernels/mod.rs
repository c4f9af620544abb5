//! The kernels over flat buffers that compiled graphs and the eager ops call, apart from the linear algebra ([`crate::linalg`]).
//!
//! Each kernel takes row-major slices and shapes, splits its work with
//! [`crate::exec::parallel`] and picks its instruction set with [`crate::exec::cpu`]; none
//! knows about a session, the eager API or the graph description. A new elementwise or
//! reduction kernel goes in the file of its family here; a new product or convolution in
//! [`crate::linalg`].
//!
//! - [`math`]: the scalar math (`exp`, `tanh`, `erf`...) every elementwise loop inlines;
//! - [`elementwise`]: broadcasting unary, binary and ternary loops; [`division`]: division
//!   by a shared divisor;
//! - [`reduce`], [`reduce_blocks`] (a reduction's partial sums recorded block by block) and
//!   [`softmax`];
//! - [`layout`] (transpose) and [`selection`] (slicing, concatenation, gather...);
//! - [`scan`] (`cumsum`, `cumprod`) and [`top_k`] (with the gather and scatter along the last
//!   axis it needs); [`resize`]: `tf.image.resize` and its gradients;
//! - [`pool`]: max and average pooling, with [`padding`]'s `SAME` and `VALID`; [`pool_grad`]:
//!   their gradients;
//! - [`scatter`]: scatter-add along an axis (`gather`'s gradient).

pub mod division;
pub mod elementwise;
pub mod layout;
pub mod math;
pub mod padding;
pub mod pool;
pub mod pool_grad;
pub mod reduce;
pub mod reduce_blocks;
pub mod resize;
pub mod scan;
pub mod scatter;
pub mod selection;
pub mod softmax;
pub mod top_k;
