//! The padding modes of the convolutions and pooling (`SAME`, `VALID`), with TensorFlow's semantics.

/// Padding mode of `conv2d` and the pooling ops, with TensorFlow's semantics.
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
