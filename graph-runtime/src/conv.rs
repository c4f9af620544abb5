//! conv2d (NHWC input, HWIO kernel, stride, SAME/VALID padding) as im2col + GEMM per block of output pixels, with an epilogue hook.

/// Padding mode of `conv2d`, with TensorFlow's semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Output size `ceil(in / stride)`; the padding is split with the extra pixel after.
    Same,
    /// No padding: output size `ceil((in - k + 1) / stride)`.
    Valid,
}

/// `SAME` padding, as written in a `#[graph]` body.
pub const SAME: Padding = Padding::Same;
/// `VALID` padding, as written in a `#[graph]` body.
pub const VALID: Padding = Padding::Valid;
