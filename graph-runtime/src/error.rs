//! The one error type of grafo: every run-time failure (bad input shapes, failed checks, I/O) is a variant here.

use std::fmt;

/// Everything that can go wrong when a graph or an eager op runs.
///
/// Compile-time problems (shape mismatches the macro can see) never get here: they are
/// compile errors. These are the checks that depend on the values fed at run time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input's rank is not the declared one (only possible through the dynamic eager API).
    #[error("`{param}`: expected rank {expected}, found rank {found} (shape {found_shape:?})")]
    Rank {
        param: String,
        expected: usize,
        found: usize,
        found_shape: Vec<usize>,
    },
    /// A static dim of an input does not match the declared size.
    #[error(
        "`{param}` axis {axis}: expected size {expected}, found {found} (shape {found_shape:?})"
    )]
    InputDim {
        param: String,
        axis: usize,
        expected: usize,
        found: usize,
        found_shape: Vec<usize>,
    },
    /// An input axis declared as a product of symbols and a constant (`Tensor<f32, {B * 4}>`)
    /// does not have that size, or its size leaves its one unbound symbol without a size.
    #[error("`{param}` axis {axis}: declared `{dim}`, {message} (shape {found_shape:?})")]
    InputProductDim {
        param: String,
        axis: usize,
        dim: String,
        message: String,
        found_shape: Vec<usize>,
    },
    /// One symbolic dim is bound to two different sizes by two inputs (or two axes).
    #[error(
        "symbol `{symbol}` is bound to {bound} by `{bound_by}` but `{param}` axis {axis} has size {found}"
    )]
    SymbolConflict {
        symbol: String,
        bound: usize,
        bound_by: String,
        param: String,
        axis: usize,
        found: usize,
    },
    /// Two operands of an op have incompatible shapes (eager API, or a symbolic check at run time).
    #[error("`{op}`: {message}: left is {left:?}, right is {right:?}{}", axis_text(*axis))]
    Shape {
        op: &'static str,
        message: String,
        left: Vec<usize>,
        right: Vec<usize>,
        axis: Option<usize>,
    },
    /// An argument of an op is invalid on its own (an axis out of range, a bad permutation, a zero stride).
    #[error("`{op}`: {message}")]
    InvalidArgument { op: &'static str, message: String },
    /// A `assert_*` check failed at run time (tf.debugging).
    #[error("assertion `{op}` failed{}: {message}", line_text(*line))]
    Assertion {
        op: &'static str,
        message: String,
        line: u32,
    },
    /// Integer arithmetic that TensorFlow rejects at run time: a zero divisor of `/`, `%`,
    /// `floordiv`, `floormod`, `truncatediv` or `truncatemod`, or a negative exponent of `pow`.
    #[error("`{op}`{}: {message}", line_text(*line))]
    Arithmetic {
        op: &'static str,
        message: String,
        line: u32,
    },
    /// A tensor is too large to address: its element count overflows `usize`, or its size is
    /// above `isize::MAX` bytes (the limit of every Rust allocation, and ndarray's).
    #[error(
        "`{op}`: a tensor of shape {shape:?} with {elem_bytes}-byte elements is too large: its size overflows the address space"
    )]
    SizeOverflow {
        op: &'static str,
        shape: Vec<usize>,
        elem_bytes: usize,
    },
    /// The allocator could not provide the buffer of a result or an intermediate.
    #[error("`{op}`: out of memory allocating {bytes} bytes ({elements} elements)")]
    OutOfMemory {
        op: &'static str,
        elements: usize,
        bytes: usize,
    },
    /// Writing an export (TensorBoard event file, trace) failed.
    #[error("i/o error: {0}")]
    Io(String),
    /// A checkpoint does not fit the parameter struct it is loaded into: every missing,
    /// unexpected, misshapen or mistyped tensor of the file, listed together.
    #[error(
        "checkpoint `{path}` does not fit `{model}`: {}",
        problems_text(problems)
    )]
    Checkpoint {
        path: String,
        model: String,
        problems: Vec<CheckpointProblem>,
    },
    /// A host parameter's value does not fit the dtype of the tensor it is used with (an
    /// `i64` of 5000000000 added to an `i32` tensor), checked when the graph is called.
    #[error("host parameter `{param}` is {value}, out of range for {dtype}, the dtype it is used with in the graph")]
    HostValueRange {
        param: String,
        value: String,
        dtype: &'static str,
    },
}

/// One way a checkpoint's tensor does not fit its parameter struct (`Error::Checkpoint`).
/// `name` is the field path (`blocks.3.wq`); `source` the file's name for it when a
/// `Remap` renamed it.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointProblem {
    /// No tensor of the file is named (or renamed to) this field's path.
    Missing {
        name: String,
        dtype: &'static str,
        shape: Vec<usize>,
    },
    /// A tensor of the file that no field has (after renaming), and that no rule skips.
    Unexpected {
        name: String,
        dtype: String,
        shape: Vec<usize>,
    },
    /// The tensor's shape (after the remap's permutation) is not the field's.
    Shape {
        name: String,
        source: Option<String>,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// The tensor's dtype is not the field's (no conversion is made).
    DType {
        name: String,
        source: Option<String>,
        expected: &'static str,
        found: String,
    },
    /// A remap's permutation does not fit the tensor's rank.
    Layout {
        name: String,
        axes: Vec<usize>,
        rank: usize,
    },
    /// Two tensors of the file are renamed to the same field path.
    Duplicate { name: String, sources: Vec<String> },
    /// A remap's split or combination does not fit the file's tensors.
    Remap { name: String, message: String },
    /// The file is not a valid safetensors file.
    Format(String),
}

impl fmt::Display for CheckpointProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = |source: &Option<String>| match source {
            Some(s) => format!(" (the file's `{s}`)"),
            None => String::new(),
        };
        match self {
            CheckpointProblem::Missing { name, dtype, shape } => {
                write!(f, "missing tensor `{name}` ({dtype} {shape:?})")
            }
            CheckpointProblem::Unexpected { name, dtype, shape } => write!(
                f,
                "unexpected tensor `{name}` ({dtype} {shape:?}): no field has this path (skip it or rename it with a `Remap`)"
            ),
            CheckpointProblem::Shape {
                name,
                source,
                expected,
                found,
            } => write!(
                f,
                "tensor `{name}`{} has shape {found:?}, the field is {expected:?}",
                from(source)
            ),
            CheckpointProblem::DType {
                name,
                source,
                expected,
                found,
            } => write!(
                f,
                "tensor `{name}`{} is {found}, the field is {expected}",
                from(source)
            ),
            CheckpointProblem::Layout { name, axes, rank } => write!(
                f,
                "tensor `{name}` has rank {rank}, but the remap permutes it by {axes:?}"
            ),
            CheckpointProblem::Duplicate { name, sources } => write!(
                f,
                "tensors {} are all renamed to `{name}`",
                sources
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            CheckpointProblem::Remap { name, message } => write!(f, "tensor `{name}`: {message}"),
            CheckpointProblem::Format(message) => write!(f, "not a safetensors file: {message}"),
        }
    }
}

fn problems_text(problems: &[CheckpointProblem]) -> String {
    let mut s = format!(
        "{} problem{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        s.push_str(&format!("\n  - {p}"));
    }
    s
}

fn axis_text(axis: Option<usize>) -> String {
    match axis {
        Some(a) => format!(" (axis {a})"),
        None => String::new(),
    }
}

fn line_text(line: u32) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" at line {line}")
    }
}

impl Error {
    /// Attaches the source line of the `assert_*` call (or of the integer division) to an
    /// assertion or arithmetic error; other errors pass through.
    pub fn at_line(self, at: u32) -> Error {
        match self {
            Error::Assertion { op, message, .. } => Error::Assertion {
                op,
                message,
                line: at,
            },
            Error::Arithmetic { op, message, .. } => Error::Arithmetic {
                op,
                message,
                line: at,
            },
            other => other,
        }
    }

    /// A shape error between two operands.
    #[cold]
    #[inline(never)]
    pub fn shape(
        op: &'static str,
        message: impl fmt::Display,
        left: &[usize],
        right: &[usize],
        axis: Option<usize>,
    ) -> Error {
        Error::Shape {
            op,
            message: message.to_string(),
            left: left.to_vec(),
            right: right.to_vec(),
            axis,
        }
    }

    /// An integer arithmetic error of one op (the line is attached by [`Error::at_line`]).
    #[cold]
    #[inline(never)]
    pub fn arithmetic(op: &'static str, message: impl fmt::Display) -> Error {
        Error::Arithmetic {
            op,
            message: message.to_string(),
            line: 0,
        }
    }

    /// A size that overflows the address space (see [`Error::SizeOverflow`]).
    #[cold]
    #[inline(never)]
    pub fn size_overflow(op: &'static str, shape: &[usize], elem_bytes: usize) -> Error {
        Error::SizeOverflow {
            op,
            shape: shape.to_vec(),
            elem_bytes,
        }
    }

    /// A failed allocation of `elements` elements, `bytes` bytes in all.
    #[cold]
    #[inline(never)]
    pub fn out_of_memory(op: &'static str, elements: usize, bytes: usize) -> Error {
        Error::OutOfMemory {
            op,
            elements,
            bytes,
        }
    }

    /// An invalid argument of one op.
    #[cold]
    #[inline(never)]
    pub fn invalid(op: &'static str, message: impl fmt::Display) -> Error {
        Error::InvalidArgument {
            op,
            message: message.to_string(),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e.to_string())
    }
}
