//! The ops of the IR: unary, binary, comparison, reduction, pooling, assert and selection ops, and `Op` over them.

use super::graph::CondId;
use super::types::Scalar;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Square,
    Tanh,
    Sigmoid,
    Relu,
    Sin,
    Cos,
    Neg,
    Erf,
    /// `gelu(x)`: TensorFlow's exact form `0.5 * x * (1 + erf(x / sqrt(2)))`.
    Gelu,
    /// `gelu(x, true)`: the tanh approximation.
    GeluTanh,
    Softplus,
    Elu,
    /// `!x` and `logical_not(x)` on bool tensors.
    LogicalNot,
    /// `min(max(x, 0), 6)`; NaN stays NaN.
    Relu6,
    /// -1, 0 or 1 (0 for both zeros; NaN stays NaN).
    Sign,
    Floor,
    Ceil,
    /// Round half to even (TensorFlow's `round`); the identity on integers.
    Round,
    /// `ln(1 + x)`, accurate near 0.
    Log1p,
    /// `e^x - 1`, accurate near 0.
    Expm1,
    /// `1 / x`.
    Reciprocal,
}

/// What a unary op accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperandKind {
    /// f32 or f64.
    Float,
    /// Any number (not bool).
    Number,
    /// Only bool.
    Bool,
}

impl UnaryOp {
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        Some(match name {
            "abs" => UnaryOp::Abs,
            "exp" => UnaryOp::Exp,
            "log" => UnaryOp::Log,
            "sqrt" => UnaryOp::Sqrt,
            "rsqrt" => UnaryOp::Rsqrt,
            "square" => UnaryOp::Square,
            "tanh" => UnaryOp::Tanh,
            "sigmoid" => UnaryOp::Sigmoid,
            "relu" => UnaryOp::Relu,
            "sin" => UnaryOp::Sin,
            "cos" => UnaryOp::Cos,
            "neg" => UnaryOp::Neg,
            "erf" => UnaryOp::Erf,
            "softplus" => UnaryOp::Softplus,
            "elu" => UnaryOp::Elu,
            "logical_not" => UnaryOp::LogicalNot,
            "relu6" => UnaryOp::Relu6,
            "sign" => UnaryOp::Sign,
            "floor" => UnaryOp::Floor,
            "ceil" => UnaryOp::Ceil,
            "round" => UnaryOp::Round,
            "log1p" => UnaryOp::Log1p,
            "expm1" => UnaryOp::Expm1,
            "reciprocal" => UnaryOp::Reciprocal,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Square => "square",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Neg => "neg",
            UnaryOp::Erf => "erf",
            UnaryOp::Gelu | UnaryOp::GeluTanh => "gelu",
            UnaryOp::Softplus => "softplus",
            UnaryOp::Elu => "elu",
            UnaryOp::LogicalNot => "logical_not",
            UnaryOp::Relu6 => "relu6",
            UnaryOp::Sign => "sign",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Reciprocal => "reciprocal",
        }
    }

    /// Whether the op needs a float operand (transcendentals) rather than any number.
    pub fn needs_float(self) -> bool {
        self.operand_kind() == OperandKind::Float
    }

    /// Whether the op is piecewise constant, so that no gradient flows through it (TF's
    /// `sign`, `floor`, `ceil` and `round` gradients are zero).
    pub fn is_step(self) -> bool {
        matches!(
            self,
            UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round
        )
    }

    /// The dtypes the op accepts.
    pub fn operand_kind(self) -> OperandKind {
        match self {
            UnaryOp::Abs | UnaryOp::Square | UnaryOp::Relu | UnaryOp::Neg => OperandKind::Number,
            UnaryOp::Relu6 | UnaryOp::Sign | UnaryOp::Round => OperandKind::Number,
            UnaryOp::LogicalNot => OperandKind::Bool,
            _ => OperandKind::Float,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    /// TensorFlow's `truncatediv` (integer `/` by another name; `trunc(a / b)` on floats).
    TruncateDiv,
    /// TensorFlow's `truncatemod` and the `%` operator (Rust's remainder).
    TruncateMod,
    FloorDiv,
    FloorMod,
    /// `leaky_relu(x, alpha)`: `x` where `x > 0`, else `alpha * x`; `alpha` is a scalar.
    LeakyRelu,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::TruncateDiv => "truncatediv",
            BinaryOp::TruncateMod => "truncatemod",
            BinaryOp::FloorDiv => "floordiv",
            BinaryOp::FloorMod => "floormod",
            BinaryOp::LeakyRelu => "leaky_relu",
            BinaryOp::LogicalAnd => "logical_and",
            BinaryOp::LogicalOr => "logical_or",
            BinaryOp::LogicalXor => "logical_xor",
        }
    }

    /// The binary ops called by name (`pow(a, b)`); `leaky_relu` has its own arm (a default alpha).
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        Some(match name {
            "pow" => BinaryOp::Pow,
            "maximum" => BinaryOp::Maximum,
            "minimum" => BinaryOp::Minimum,
            "truncatediv" => BinaryOp::TruncateDiv,
            "truncatemod" => BinaryOp::TruncateMod,
            "floordiv" => BinaryOp::FloorDiv,
            "floormod" => BinaryOp::FloorMod,
            "logical_and" => BinaryOp::LogicalAnd,
            "logical_or" => BinaryOp::LogicalOr,
            "logical_xor" => BinaryOp::LogicalXor,
            _ => return None,
        })
    }

    /// Ops on bool operands only.
    pub fn is_logical(self) -> bool {
        matches!(
            self,
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor
        )
    }

    /// Integer ops that fail on a zero divisor (TensorFlow raises).
    pub fn divides(self) -> bool {
        matches!(
            self,
            BinaryOp::Div
                | BinaryOp::TruncateDiv
                | BinaryOp::TruncateMod
                | BinaryOp::FloorDiv
                | BinaryOp::FloorMod
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "less",
            CmpOp::Le => "less_equal",
            CmpOp::Gt => "greater",
            CmpOp::Ge => "greater_equal",
            CmpOp::Eq => "equal",
            CmpOp::Ne => "not_equal",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "reduce_sum",
            ReduceKind::Mean => "reduce_mean",
            ReduceKind::Max => "reduce_max",
            ReduceKind::Min => "reduce_min",
            ReduceKind::Prod => "reduce_prod",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Padding {
    Same,
    Valid,
}

/// How `resize` samples (TF's `ResizeMethod`): `NEAREST` or `BILINEAR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResizeMethod {
    Nearest,
    Bilinear,
}

impl ResizeMethod {
    /// The method as the language writes it.
    pub fn name(self) -> &'static str {
        match self {
            ResizeMethod::Nearest => "NEAREST",
            ResizeMethod::Bilinear => "BILINEAR",
        }
    }
}

/// The reduction of a pooling window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    Max,
    Avg,
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Max => "max_pool2d",
            PoolKind::Avg => "avg_pool2d",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AssertKind {
    NonNegative,
    Greater,
    Less,
    AllFinite,
    /// The implicit check before an integer division: no zero divisor (named op).
    NonZeroDivisor(&'static str),
    /// The implicit check before an integer `pow`: no negative exponent.
    NonNegativeExponent,
}

impl AssertKind {
    pub fn name(self) -> &'static str {
        match self {
            AssertKind::NonNegative => "assert_non_negative",
            AssertKind::Greater => "assert_greater",
            AssertKind::Less => "assert_less",
            AssertKind::AllFinite => "assert_all_finite",
            AssertKind::NonZeroDivisor(_) => "check_nonzero_divisor",
            AssertKind::NonNegativeExponent => "check_non_negative_exponent",
        }
    }

    /// The op whose precondition an implicit check is (`div`, `pow`), for its error.
    pub fn checked_op(self) -> Option<&'static str> {
        match self {
            AssertKind::NonZeroDivisor(op) => Some(op),
            AssertKind::NonNegativeExponent => Some("pow"),
            _ => None,
        }
    }
}

/// What a node computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Tensor parameter number `param`.
    Input {
        param: usize,
    },
    /// A host (plain Rust) value used as a scalar operand: the Rust expression, cast to the node's dtype.
    Host {
        expr: String,
    },
    /// A scalar constant; `weak` literals take the dtype of the other operand.
    Const {
        value: Scalar,
        weak: bool,
    },
    /// `zeros`, `ones`, `fill`: a tensor of the node's shape filled with the scalar input.
    Fill,
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CmpOp),
    Select,
    Cast,
    Reduce {
        kind: ReduceKind,
        axes: Vec<usize>,
        keep_dims: bool,
    },
    Norm,
    /// `matmul(a, b)` over the last two axes, batch axes broadcast; with `transpose_a` /
    /// `transpose_b`, input `a` / `b` is stored with its last two axes swapped
    /// (`matmul(transpose(a), b)`, `matmul(a, transpose(b))` read in place).
    MatMul {
        transpose_a: bool,
        transpose_b: bool,
    },
    Transpose {
        perm: Vec<usize>,
    },
    Reshape,
    Conv2d {
        stride: usize,
        padding: Padding,
    },
    BiasAdd,
    /// `conv2d` with dilations other than 1, and `depthwise_conv2d` (kernel `[KH, KW, C, M]`,
    /// output channel `c * M + m`): the direct kernel of the runtime's `conv_general.rs`.
    ConvGeneral {
        stride: usize,
        dilation: [usize; 2],
        padding: Padding,
        depthwise: bool,
    },
    /// `max_pool2d` / `avg_pool2d` over an NHWC tensor (window and strides as rows, columns).
    Pool {
        kind: PoolKind,
        ksize: [usize; 2],
        strides: [usize; 2],
        padding: Padding,
    },
    /// The gradient of a convolution (`Conv2d`, or `ConvGeneral` with these attributes) with
    /// respect to its input, TF's `Conv2DBackpropInput`: inputs `dy` (the convolution's output
    /// shape) and the kernel; the node has the input's shape. `conv2d_transpose` is this op.
    Conv2dBackpropInput {
        stride: usize,
        dilation: [usize; 2],
        padding: Padding,
        depthwise: bool,
    },
    /// The gradient of a convolution with respect to its kernel, TF's `Conv2DBackpropFilter`:
    /// inputs the convolution's input `x` and `dy`; the node has the kernel's shape.
    Conv2dBackpropFilter {
        stride: usize,
        dilation: [usize; 2],
        padding: Padding,
        depthwise: bool,
    },
    /// The gradient of a `Pool` with respect to its input (TF's `MaxPoolGrad`, `AvgPoolGrad`):
    /// inputs `dy` and, for max pooling, the pooling's input `x`; the node has `x`'s shape.
    PoolGrad {
        kind: PoolKind,
        ksize: [usize; 2],
        strides: [usize; 2],
        padding: Padding,
    },
    Softmax {
        axis: usize,
        log: bool,
    },
    Assert {
        kind: AssertKind,
        message: String,
    },
    /// A selection or assembly op (slicing, concat, gather, ...), lowered in `lower/selection.rs`.
    Sel(SelOp),
    /// Output `index` of cond `cond`.
    CondOut {
        cond: CondId,
        index: usize,
    },
}

impl Op {
    /// The op name as in docs/OPS.md.
    pub fn name(&self) -> String {
        match self {
            Op::Input { .. } => "input".into(),
            Op::Host { .. } => "host".into(),
            Op::Const { .. } => "constant".into(),
            Op::Fill => "fill".into(),
            Op::Unary(u) => u.name().into(),
            Op::Binary(b) => b.name().into(),
            Op::Compare(c) => c.name().into(),
            Op::Select => "select".into(),
            Op::Cast => "cast".into(),
            Op::Reduce { kind, .. } => kind.name().into(),
            Op::Norm => "norm".into(),
            Op::MatMul { .. } => "matmul".into(),
            Op::Transpose { .. } => "transpose".into(),
            Op::Reshape => "reshape".into(),
            Op::Conv2d { .. } => "conv2d".into(),
            Op::Pool { kind, .. } => kind.name().into(),
            Op::ConvGeneral {
                depthwise: false, ..
            } => "conv2d".into(),
            Op::ConvGeneral {
                depthwise: true, ..
            } => "depthwise_conv2d".into(),
            Op::Conv2dBackpropInput { depthwise, .. } => {
                format!(
                    "{}conv2d_backprop_input",
                    if *depthwise { "depthwise_" } else { "" }
                )
            }
            Op::Conv2dBackpropFilter { depthwise, .. } => {
                format!(
                    "{}conv2d_backprop_filter",
                    if *depthwise { "depthwise_" } else { "" }
                )
            }
            Op::PoolGrad { kind, .. } => format!("{}_grad", kind.name()),
            Op::BiasAdd => "bias_add".into(),
            Op::Softmax { log: false, .. } => "softmax".into(),
            Op::Softmax { log: true, .. } => "log_softmax".into(),
            Op::Assert { kind, .. } => kind.name().into(),
            Op::Sel(s) => s.name().into(),
            Op::CondOut { .. } => "cond".into(),
        }
    }

    /// Elementwise ops fuse into one loop.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Const { .. }
                | Op::Host { .. }
                | Op::Fill
                | Op::Unary(_)
                | Op::Binary(_)
                | Op::Compare(_)
                | Op::Select
                | Op::Cast
                | Op::BiasAdd
        )
    }

    /// Ops with a side effect (a check) that dead-code elimination keeps.
    pub fn is_effect(&self) -> bool {
        matches!(self, Op::Assert { .. })
    }
}

/// How one input axis of a slice is read (the runtime's `selection::AxisSlice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceSpec {
    /// One static index (negative counts from the end); the axis is dropped.
    Index(i64),
    /// One index read at run time from the node's input `k` (a rank-0 integer); the axis is dropped.
    IndexInput(usize),
    /// ndarray's `start..end;step` (negative bounds count from the end; a negative step walks
    /// the range backwards from its last element).
    Range {
        start: i64,
        end: Option<i64>,
        step: i64,
    },
    /// TF's `strided_slice` `begin:end:stride` (NumPy's meaning, bounds clamped).
    Strided { begin: i64, end: i64, stride: i64 },
}

/// The selection and assembly ops (their lowering is `lower/selection.rs`, their kernels the
/// runtime's `selection.rs`). None is elementwise: each is its own group with a materialised
/// output (`expand_dims` and `squeeze` lower to `reshape` views instead).
#[derive(Debug, Clone, PartialEq)]
pub enum SelOp {
    /// `x[s![..]]`, `slice`, `strided_slice`, one piece of `split`: one entry per input axis.
    Slice {
        name: &'static str,
        axes: Vec<SliceSpec>,
    },
    /// `concat` (or `stack`, whose inputs are `reshape` views with the new axis) along `axis`.
    Concat {
        name: &'static str,
        axis: usize,
    },
    Tile {
        multiples: Vec<u64>,
    },
    /// Constant padding; input 1 is the rank-0 fill value.
    Pad {
        paddings: Vec<(u64, u64)>,
    },
    /// Inputs: the tensor and an i32/i64 index tensor.
    Gather {
        axis: usize,
    },
    /// The gradient of a `Gather` with respect to its params: inputs the gradient of the
    /// gather's result and its indices; zeros of the node's (the params') shape with each
    /// slice of the gradient added at its index (TF's `unsorted_segment_sum`).
    GatherGrad {
        axis: usize,
    },
    /// Inputs: the i32/i64 indices, then the rank-0 on and off values.
    OneHot {
        depth: u64,
    },
    /// `argmax` (or `argmin` when `min`), an i64 result.
    ArgReduce {
        axis: usize,
        min: bool,
    },
    /// `start + i * delta` for `i` in `0..n`, `n` the node's one dim.
    Range {
        start: Scalar,
        delta: Scalar,
    },
    /// `constant([[1.0, 2.0], [3.0, 4.0]])`: the node's elements in row-major order, each
    /// already of its dtype.
    Values {
        values: Vec<Scalar>,
    },
    /// `cumsum` (or the `cumprod` of `reduce_prod`'s gradient, when `prod`) along `axis`.
    Cumulative {
        axis: usize,
        exclusive: bool,
        reverse: bool,
        prod: bool,
    },
    /// The i32 indices of `top_k`: the `k` largest elements of each row of the last axis, in order.
    TopK {
        k: u64,
    },
    /// Inputs: `x` and i32 indices of `x`'s shape but for the last axis; `x`'s elements at the
    /// indices along the last axis (NumPy's `take_along_axis`): `top_k`'s values.
    TakeAlongLast,
    /// Inputs: `g` and the indices of a [`SelOp::TakeAlongLast`]; zeros of the node's shape
    /// with `g` added at the indices (the adjoint of `TakeAlongLast`).
    ScatterAlongLast,
    /// `resize` of NHWC (or HWC) images to the node's height and width (TF 2's `tf.image.resize`).
    Resize {
        method: ResizeMethod,
    },
    /// The adjoint of a `Resize`: input the gradient of its result, output the images' shape.
    ResizeGrad {
        method: ResizeMethod,
    },
}

impl SelOp {
    pub fn name(&self) -> &'static str {
        match self {
            SelOp::Slice { name, .. } | SelOp::Concat { name, .. } => name,
            SelOp::Tile { .. } => "tile",
            SelOp::Pad { .. } => "pad",
            SelOp::Gather { .. } => "gather",
            SelOp::GatherGrad { .. } => "gather_grad",
            SelOp::OneHot { .. } => "one_hot",
            SelOp::ArgReduce { min: false, .. } => "argmax",
            SelOp::ArgReduce { min: true, .. } => "argmin",
            SelOp::Range { .. } => "range",
            SelOp::Values { .. } => "constant",
            SelOp::Cumulative { prod: false, .. } => "cumsum",
            SelOp::Cumulative { prod: true, .. } => "cumprod",
            SelOp::TopK { .. } => "top_k",
            SelOp::TakeAlongLast => "take_along_axis",
            SelOp::ScatterAlongLast => "scatter_along_axis",
            SelOp::Resize { .. } => "resize",
            SelOp::ResizeGrad { .. } => "resize_grad",
        }
    }
}
