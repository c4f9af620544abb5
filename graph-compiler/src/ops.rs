//! The op table: one row per op of the `#[graph]` language (name, signature, dtypes, shape rule, doc line, TensorFlow equivalent, example), from which the unknown-op message and `docs/OPS.md` are derived.

use std::fmt::Write as _;

/// The family an op belongs to; `docs/OPS.md` has one section per family, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Create,
    Elementwise,
    Reduce,
    Linalg,
    Nn,
    Selection,
    Check,
}

impl Family {
    pub const ALL: [Family; 7] = [
        Family::Create,
        Family::Elementwise,
        Family::Reduce,
        Family::Linalg,
        Family::Nn,
        Family::Selection,
        Family::Check,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Family::Create => "Creation",
            Family::Elementwise => "Elementwise",
            Family::Reduce => "Reductions",
            Family::Linalg => "Linear algebra and shapes",
            Family::Nn => "Neural networks",
            Family::Selection => "Selection and assembly",
            Family::Check => "Checks",
        }
    }
}

/// One op of the language.
#[derive(Debug, Clone, Copy)]
pub struct OpRow {
    /// The name the body calls it by.
    pub name: &'static str,
    pub family: Family,
    /// How it is called, with the optional arguments in brackets.
    pub signature: &'static str,
    /// The element types it accepts.
    pub dtypes: &'static str,
    /// Its shape rule.
    pub shape: &'static str,
    /// One line saying what it computes.
    pub doc: &'static str,
    /// The TensorFlow op it follows.
    pub tf: &'static str,
    /// A line of a `#[graph]` body using it.
    pub example: &'static str,
}

const NUMBER: &str = "f32 f64 i32 i64";
const FLOAT: &str = "f32 f64";
const ANY: &str = "f32 f64 i32 i64 bool";
const SAME_SHAPE: &str = "same as `x`";
const BROADCAST: &str = "NumPy broadcast of the operands";

macro_rules! unary {
    ($name:literal, $dtypes:expr, $doc:literal, $tf:literal) => {
        OpRow {
            name: $name,
            family: Family::Elementwise,
            signature: concat!($name, "(x)"),
            dtypes: $dtypes,
            shape: SAME_SHAPE,
            doc: $doc,
            tf: $tf,
            example: concat!("let y = ", $name, "(x);"),
        }
    };
}

/// Every op of the language, grouped by family.
pub const OPS: &[OpRow] = &[
    // Creation.
    OpRow {
        name: "constant",
        family: Family::Create,
        signature: "constant(v) / constant::<T>(v)",
        dtypes: ANY,
        shape: "[] (a scalar)",
        doc: "A scalar constant: a literal, i32 or f32 unless suffixed or turbofished.",
        tf: "tf.constant",
        example: "let c = constant(2.0);",
    },
    OpRow {
        name: "zeros",
        family: Family::Create,
        signature: "zeros([dims]) / zeros::<T>([dims])",
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor of zeros, f32 unless turbofished.",
        tf: "tf.zeros",
        example: "let z = zeros([B, 10]);",
    },
    OpRow {
        name: "ones",
        family: Family::Create,
        signature: "ones([dims]) / ones::<T>([dims])",
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor of ones, f32 unless turbofished.",
        tf: "tf.ones",
        example: "let o = ones::<i32>([3]);",
    },
    OpRow {
        name: "fill",
        family: Family::Create,
        signature: "fill([dims], v)",
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor filled with the scalar `v`, of `v`'s dtype.",
        tf: "tf.fill",
        example: "let f = fill([4, 4], 0.5);",
    },
    // Elementwise.
    unary!(
        "abs",
        NUMBER,
        "Absolute value (wraps for the integer minimum).",
        "tf.math.abs"
    ),
    unary!("exp", FLOAT, "e to the power x.", "tf.math.exp"),
    unary!(
        "log",
        FLOAT,
        "Natural logarithm (NaN below 0, -inf at 0).",
        "tf.math.log"
    ),
    unary!("sqrt", FLOAT, "Square root.", "tf.math.sqrt"),
    unary!("rsqrt", FLOAT, "1 / sqrt(x).", "tf.math.rsqrt"),
    unary!("square", NUMBER, "x * x.", "tf.math.square"),
    unary!("tanh", FLOAT, "Hyperbolic tangent.", "tf.math.tanh"),
    unary!("sigmoid", FLOAT, "1 / (1 + exp(-x)).", "tf.math.sigmoid"),
    unary!("relu", NUMBER, "max(x, 0); NaN stays NaN.", "tf.nn.relu"),
    unary!("sin", FLOAT, "Sine.", "tf.math.sin"),
    unary!("cos", FLOAT, "Cosine.", "tf.math.cos"),
    unary!(
        "neg",
        NUMBER,
        "-x (also the unary `-` operator).",
        "tf.math.negative"
    ),
    OpRow {
        name: "pow",
        family: Family::Elementwise,
        signature: "pow(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a to the power b; integers multiply with wrapping over the whole exponent, a negative integer exponent is `Error::Arithmetic`.",
        tf: "tf.math.pow",
        example: "let y = pow(x, 3.0);",
    },
    OpRow {
        name: "maximum",
        family: Family::Elementwise,
        signature: "maximum(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The larger of a and b; NaN propagates.",
        tf: "tf.math.maximum",
        example: "let y = maximum(x, 0.0);",
    },
    OpRow {
        name: "minimum",
        family: Family::Elementwise,
        signature: "minimum(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The smaller of a and b; NaN propagates.",
        tf: "tf.math.minimum",
        example: "let y = minimum(x, 6.0);",
    },
    OpRow {
        name: "select",
        family: Family::Elementwise,
        signature: "select(cond, a, b)",
        dtypes: "cond bool; a, b any one dtype",
        shape: "NumPy broadcast of the three operands",
        doc: "a where cond is true, b elsewhere.",
        tf: "tf.where",
        example: "let y = select(x > 0.0, x, 0.1 * x);",
    },
    OpRow {
        name: "cast",
        family: Family::Elementwise,
        signature: "cast::<T>(x)",
        dtypes: ANY,
        shape: SAME_SHAPE,
        doc: "x converted to T (Rust `as` semantics: floats to integers saturate, NaN gives 0).",
        tf: "tf.cast",
        example: "let y = cast::<f32>(n);",
    },
    unary!(
        "erf",
        FLOAT,
        "The error function (branch-free, vectorised; f32 within 2 ulp).",
        "tf.math.erf"
    ),
    OpRow {
        name: "truncatediv",
        family: Family::Elementwise,
        signature: "truncatediv(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a / b rounded toward zero (integer `/` is the same); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.truncatediv",
        example: "let q = truncatediv(n, 3);",
    },
    OpRow {
        name: "truncatemod",
        family: Family::Elementwise,
        signature: "truncatemod(a, b) / a % b",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The remainder of truncatediv, with the sign of a (Rust's `%`; fmod for floats); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.truncatemod",
        example: "let r = n % 3;",
    },
    OpRow {
        name: "floordiv",
        family: Family::Elementwise,
        signature: "floordiv(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a / b rounded toward negative infinity (floor(a / b) for floats); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.floordiv",
        example: "let q = floordiv(n, 4);",
    },
    OpRow {
        name: "floormod",
        family: Family::Elementwise,
        signature: "floormod(a, b)",
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The remainder of floordiv, with the sign of b (TensorFlow's `%` on tensors); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.floormod",
        example: "let r = floormod(n, 4);",
    },
    OpRow {
        name: "clip_by_value",
        family: Family::Elementwise,
        signature: "clip_by_value(x, lo, hi)",
        dtypes: NUMBER,
        shape: "same as `x` (lo and hi broadcast to it)",
        doc: "maximum(minimum(x, hi), lo); NaN stays NaN.",
        tf: "tf.clip_by_value",
        example: "let y = clip_by_value(x, 0.0, 6.0);",
    },
    OpRow {
        name: "logical_and",
        family: Family::Elementwise,
        signature: "logical_and(a, b) / a & b",
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a and b.",
        tf: "tf.math.logical_and",
        example: "let m = (x > 0.0) & (x < 1.0);",
    },
    OpRow {
        name: "logical_or",
        family: Family::Elementwise,
        signature: "logical_or(a, b) / a | b",
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a or b.",
        tf: "tf.math.logical_or",
        example: "let m = logical_or(x < 0.0, x > 1.0);",
    },
    OpRow {
        name: "logical_xor",
        family: Family::Elementwise,
        signature: "logical_xor(a, b) / a ^ b",
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a or b but not both.",
        tf: "tf.math.logical_xor",
        example: "let m = p ^ q;",
    },
    OpRow {
        name: "logical_not",
        family: Family::Elementwise,
        signature: "logical_not(x) / !x",
        dtypes: "bool",
        shape: SAME_SHAPE,
        doc: "not x.",
        tf: "tf.math.logical_not",
        example: "let y = select(!(x > 0.0), 0.0, x);",
    },
    // Reductions.
    OpRow {
        name: "reduce_sum",
        family: Family::Reduce,
        signature: "reduce_sum(x [, axis or [axes] [, keep_dims]])",
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Sum over the axes (negative axes count from the end).",
        tf: "tf.math.reduce_sum",
        example: "let s = reduce_sum(x, -1, true);",
    },
    OpRow {
        name: "reduce_mean",
        family: Family::Reduce,
        signature: "reduce_mean(x [, axis or [axes] [, keep_dims]])",
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Mean over the axes.",
        tf: "tf.math.reduce_mean",
        example: "let m = reduce_mean(x, [0, 1]);",
    },
    OpRow {
        name: "reduce_max",
        family: Family::Reduce,
        signature: "reduce_max(x [, axis or [axes] [, keep_dims]])",
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Maximum over the axes; NaN propagates.",
        tf: "tf.math.reduce_max",
        example: "let m = reduce_max(x, 1);",
    },
    OpRow {
        name: "reduce_min",
        family: Family::Reduce,
        signature: "reduce_min(x [, axis or [axes] [, keep_dims]])",
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Minimum over the axes; NaN propagates.",
        tf: "tf.math.reduce_min",
        example: "let m = reduce_min(x);",
    },
    OpRow {
        name: "norm",
        family: Family::Reduce,
        signature: "norm(x)",
        dtypes: FLOAT,
        shape: "[] (a scalar)",
        doc: "The L2 norm over all elements.",
        tf: "tf.norm",
        example: "if norm(y) < limit { y = 0.5 * y; }",
    },
    // Linear algebra and shapes.
    OpRow {
        name: "matmul",
        family: Family::Linalg,
        signature: "matmul(a, b)",
        dtypes: NUMBER,
        shape: "[.., M, K] x [.., K, N] -> [.., M, N]; the leading (batch) axes broadcast as NumPy's `@`",
        doc: "Matrix product over the last two axes, batched over the others; an operand transposed over its last two axes (`matmul(transpose(a), b)`, `matmul(a, transpose(b))`, or both) is read in place.",
        tf: "tf.linalg.matmul",
        example: "let scores = matmul(q, transpose(k, [0, 1, 3, 2]));",
    },
    OpRow {
        name: "transpose",
        family: Family::Linalg,
        signature: "transpose(x [, [perm]])",
        dtypes: ANY,
        shape: "x's dims permuted (reversed by default)",
        doc: "Permutes the axes.",
        tf: "tf.transpose",
        example: "let t = transpose(x, [0, 2, 1]);",
    },
    OpRow {
        name: "reshape",
        family: Family::Linalg,
        signature: "reshape(x, [dims])",
        dtypes: ANY,
        shape: "the listed dims (literals, symbols, products such as `B * 4`, one -1); the element count must match",
        doc: "The same elements in row-major order under a new shape.",
        tf: "tf.reshape",
        example: "let heads = reshape(x, [B * 4, 64, 16]);",
    },
    // Neural networks.
    OpRow {
        name: "conv2d",
        family: Family::Nn,
        signature: "conv2d(x, k, stride, SAME or VALID [, dilations])",
        dtypes: NUMBER,
        shape: "x [N, H, W, C] (NHWC), k [KH, KW, C, F] (HWIO) -> [N, H', W', F]; a dilation d spans (KH - 1) * d + 1 rows",
        doc: "2-D convolution with TensorFlow's padding rule; `dilations` is `d`, `[dh, dw]` or `[1, dh, dw, 1]`.",
        tf: "tf.nn.conv2d",
        example: "let y = relu(conv2d(x, k, 1, SAME) + b);",
    },
    OpRow {
        name: "bias_add",
        family: Family::Nn,
        signature: "bias_add(x, b)",
        dtypes: NUMBER,
        shape: "x [.., C], b [C] -> x's shape",
        doc: "Adds a bias along the last axis.",
        tf: "tf.nn.bias_add",
        example: "let y = bias_add(matmul(x, w), b);",
    },
    OpRow {
        name: "depthwise_conv2d",
        family: Family::Nn,
        signature: "depthwise_conv2d(x, k, stride, SAME or VALID [, dilations])",
        dtypes: FLOAT,
        shape: "x [N, H, W, C] (NHWC), k [KH, KW, C, M] -> [N, H', W', C*M] (channel c*M + m)",
        doc: "Each input channel convolved with its own M filters, TensorFlow's padding rule.",
        tf: "tf.nn.depthwise_conv2d",
        example: "let y = relu(depthwise_conv2d(x, k, 1, SAME) + b);",
    },
    OpRow {
        name: "max_pool2d",
        family: Family::Nn,
        signature: "max_pool2d(x, ksize, strides, SAME or VALID)",
        dtypes: NUMBER,
        shape: "x [N, H, W, C] (NHWC) -> [N, H', W', C]; SAME: ceil(H / stride), VALID: (H - k) / stride + 1",
        doc: "The maximum of each window (padding never wins; NaN propagates); `ksize`/`strides` are `k`, `[kh, kw]` or `[1, kh, kw, 1]`.",
        tf: "tf.nn.max_pool2d",
        example: "let p = max_pool2d(relu(conv2d(x, k, 1, SAME) + b), 2, 2, VALID);",
    },
    OpRow {
        name: "avg_pool2d",
        family: Family::Nn,
        signature: "avg_pool2d(x, ksize, strides, SAME or VALID)",
        dtypes: FLOAT,
        shape: "x [N, H, W, C] (NHWC) -> [N, H', W', C]; SAME: ceil(H / stride), VALID: (H - k) / stride + 1",
        doc: "The mean of each window's valid (unpadded) elements, as TF divides.",
        tf: "tf.nn.avg_pool2d",
        example: "let p = avg_pool2d(x, [3, 3], [2, 2], SAME);",
    },
    OpRow {
        name: "softmax",
        family: Family::Nn,
        signature: "softmax(x, axis)",
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "exp(x) / sum(exp(x)) along the axis, computed stably.",
        tf: "tf.nn.softmax",
        example: "let p = softmax(logits, -1);",
    },
    OpRow {
        name: "log_softmax",
        family: Family::Nn,
        signature: "log_softmax(x, axis)",
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "log(softmax(x)) along the axis, computed stably.",
        tf: "tf.nn.log_softmax",
        example: "let lp = log_softmax(logits, -1);",
    },
    // Selection and assembly.
    OpRow {
        name: "slice",
        family: Family::Selection,
        signature: "slice(x, [begin], [size])",
        dtypes: ANY,
        shape: "one dim per `size` (-1: the rest of the axis); 0 <= begin <= begin + size <= dim",
        doc: "The block of `x` starting at `begin` with `size` elements per axis.",
        tf: "tf.slice",
        example: "let crop = slice(x, [0, 2], [-1, 5]);",
    },
    OpRow {
        name: "strided_slice",
        family: Family::Selection,
        signature: "strided_slice(x, [begin], [end] [, [strides] [, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask]])",
        dtypes: ANY,
        shape: "NumPy's `begin:end:stride` per entry (bounds from the end when negative, clamped; strides 1 by default); the masks as TF's, bit i for entry i: begin/end masked take the whole side, an ellipsis stands for the axes no entry reads, a new axis adds a 1, a shrunk axis is dropped",
        doc: "TF's strided slice, masks included; the masks are integers given by position after `strides`, in TF's order (trailing ones may be left out, default 0).",
        tf: "tf.strided_slice",
        example: "let last = strided_slice(x, [0, -1], [0, 0], [1, 1], 1, 1, 0, 0, 2); // x[:, -1]",
    },
    OpRow {
        name: "concat",
        family: Family::Selection,
        signature: "concat([a, b, ...], axis)",
        dtypes: ANY,
        shape: "the operands agree on every axis but `axis`, whose sizes add up (to a constant or one symbol)",
        doc: "The operands joined along an existing axis.",
        tf: "tf.concat",
        example: "let ab = concat([a, b], -1);",
    },
    OpRow {
        name: "stack",
        family: Family::Selection,
        signature: "stack([a, b, ...] [, axis])",
        dtypes: ANY,
        shape: "operands of one shape; a new axis of size n at `axis` (default 0)",
        doc: "The operands joined along a new axis.",
        tf: "tf.stack",
        example: "let pair = stack([a, b], 1);",
    },
    OpRow {
        name: "split",
        family: Family::Selection,
        signature: "split(x, n | [sizes] [, axis])",
        dtypes: ANY,
        shape: "a tuple of n equal pieces (or of the listed sizes) along a static axis (default 0)",
        doc: "The pieces of `x` along `axis`; bind them with a tuple pattern.",
        tf: "tf.split",
        example: "let (z, r) = split(gates, 2, -1);",
    },
    OpRow {
        name: "tile",
        family: Family::Selection,
        signature: "tile(x, [multiples])",
        dtypes: ANY,
        shape: "axis k times multiples[k] (a symbolic axis only by 1)",
        doc: "`x` repeated along each axis.",
        tf: "tf.tile",
        example: "let t = tile(x, [1, 3]);",
    },
    OpRow {
        name: "pad",
        family: Family::Selection,
        signature: "pad(x, [[before, after], ...] [, value])",
        dtypes: ANY,
        shape: "axis k grows by before + after (a symbolic axis only by 0)",
        doc: "Constant padding with `value` (default 0).",
        tf: "tf.pad (mode CONSTANT)",
        example: "let p = pad(img, [[0, 0], [1, 1], [1, 1], [0, 0]]);",
    },
    OpRow {
        name: "expand_dims",
        family: Family::Selection,
        signature: "expand_dims(x, axis)",
        dtypes: ANY,
        shape: "a new axis of size 1 at `axis` (in -rank-1..=rank)",
        doc: "A view of `x` with one more axis of size 1.",
        tf: "tf.expand_dims",
        example: "let col = expand_dims(v, -1);",
    },
    OpRow {
        name: "squeeze",
        family: Family::Selection,
        signature: "squeeze(x [, axes])",
        dtypes: ANY,
        shape: "drops the static axes of size 1 (or the listed ones, which must be 1)",
        doc: "A view of `x` without its axes of size 1.",
        tf: "tf.squeeze",
        example: "let v = squeeze(col, [1]);",
    },
    OpRow {
        name: "gather",
        family: Family::Selection,
        signature: "gather(x, indices [, axis])",
        dtypes: "f32 f64 i32 i64 bool; indices i32 i64",
        shape: "x's shape with `axis` replaced by the indices' shape (default axis 0)",
        doc: "The slices of `x` along `axis` at `indices`; an index out of range is an `Err` at run time.",
        tf: "tf.gather",
        example: "let rows = gather(table, ids, 0);",
    },
    OpRow {
        name: "one_hot",
        family: Family::Selection,
        signature: "one_hot(indices, depth [, on, off])",
        dtypes: "indices i32 i64; result f32 or the on/off dtype",
        shape: "the indices' shape plus a last axis of `depth`",
        doc: "`on` at each index and `off` elsewhere; an index outside [0, depth) gives a row of `off`.",
        tf: "tf.one_hot",
        example: "let labels = one_hot(y, 10);",
    },
    OpRow {
        name: "argmax",
        family: Family::Selection,
        signature: "argmax(x [, axis])",
        dtypes: "f32 f64 i32 i64; result i64",
        shape: "x's shape without `axis` (default 0)",
        doc: "The index of the largest element along `axis`; ties take the first, the first NaN wins.",
        tf: "tf.math.argmax",
        example: "let class = argmax(logits, -1);",
    },
    OpRow {
        name: "argmin",
        family: Family::Selection,
        signature: "argmin(x [, axis])",
        dtypes: "f32 f64 i32 i64; result i64",
        shape: "x's shape without `axis` (default 0)",
        doc: "The index of the smallest element along `axis`; ties take the first, the first NaN wins.",
        tf: "tf.math.argmin",
        example: "let nearest = argmin(dist, 1);",
    },
    OpRow {
        name: "range",
        family: Family::Selection,
        signature: "range(n) | range(start, limit [, delta])",
        dtypes: "i32 (f32 with a float argument; `range::<T>`)",
        shape: "[n], n a literal or a symbolic dim, or TF's count for start/limit/delta",
        doc: "`start, start + delta, ...` below `limit`, as TF's range.",
        tf: "tf.range",
        example: "let steps = range(B);",
    },
    OpRow {
        name: "gelu",
        family: Family::Nn,
        signature: "gelu(x [, approximate])",
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "0.5 * x * (1 + erf(x / sqrt(2))); `approximate` (a literal, default false) selects the tanh form.",
        tf: "tf.nn.gelu",
        example: "let h = gelu(matmul(x, w) + b);",
    },
    unary!(
        "softplus",
        FLOAT,
        "ln(1 + exp(x)) without overflow, with TensorFlow's thresholds.",
        "tf.math.softplus"
    ),
    unary!(
        "elu",
        FLOAT,
        "x for x > 0, exp(x) - 1 otherwise.",
        "tf.nn.elu"
    ),
    OpRow {
        name: "leaky_relu",
        family: Family::Nn,
        signature: "leaky_relu(x [, alpha])",
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "x for x > 0, alpha * x otherwise; alpha is a scalar, default 0.2.",
        tf: "tf.nn.leaky_relu",
        example: "let y = leaky_relu(x, 0.1);",
    },
    OpRow {
        name: "batch_normalization",
        family: Family::Nn,
        signature: "batch_normalization(x, mean, variance, offset, scale, variance_epsilon)",
        dtypes: FLOAT,
        shape: BROADCAST,
        doc: "Inference batch norm: inv = rsqrt(variance + eps) * scale; x * inv + (offset - mean * inv).",
        tf: "tf.nn.batch_normalization",
        example: "let y = batch_normalization(x, mu, var, beta, gamma, 1e-3);",
    },
    OpRow {
        name: "layer_norm",
        family: Family::Nn,
        signature: "layer_norm(x, gamma, beta [, axis or [axes] [, epsilon]])",
        dtypes: FLOAT,
        shape: "same as `x` (gamma and beta broadcast to it)",
        doc: "(x - mean) / sqrt(variance + epsilon) * gamma + beta over the axes (default -1, epsilon 1e-3); one pass over rows for trailing axes.",
        tf: "tf.keras.layers.LayerNormalization",
        example: "let y = layer_norm(x, gamma, beta, -1, 1e-5);",
    },
    // Checks.
    OpRow {
        name: "assert_non_negative",
        family: Family::Check,
        signature: "assert_non_negative(x, \"msg\")",
        dtypes: NUMBER,
        shape: "a statement: no value",
        doc: "Fails the call with `Error::Assertion` unless every element is >= 0.",
        tf: "tf.debugging.assert_non_negative",
        example: "assert_non_negative(x, \"x must be >= 0\");",
    },
    OpRow {
        name: "assert_greater",
        family: Family::Check,
        signature: "assert_greater(x, y, \"msg\")",
        dtypes: NUMBER,
        shape: "a statement: no value; x and y broadcast",
        doc: "Fails the call unless x > y everywhere.",
        tf: "tf.debugging.assert_greater",
        example: "assert_greater(x, 0.0, \"x must be positive\");",
    },
    OpRow {
        name: "assert_less",
        family: Family::Check,
        signature: "assert_less(x, y, \"msg\")",
        dtypes: NUMBER,
        shape: "a statement: no value; x and y broadcast",
        doc: "Fails the call unless x < y everywhere.",
        tf: "tf.debugging.assert_less",
        example: "assert_less(x, 1.0, \"x must be below 1\");",
    },
    OpRow {
        name: "assert_all_finite",
        family: Family::Check,
        signature: "assert_all_finite(x, \"msg\")",
        dtypes: FLOAT,
        shape: "a statement: no value",
        doc: "Fails the call if any element is NaN or infinite.",
        tf: "tf.debugging.assert_all_finite",
        example: "assert_all_finite(y, \"y overflowed\");",
    },
];

/// The row of the op called `name`.
pub fn lookup(name: &str) -> Option<&'static OpRow> {
    OPS.iter().find(|row| row.name == name)
}

/// The op name nearest to `name` (edit distance at most a third of its length, at least 1),
/// for the unknown-op message's "did you mean".
pub fn nearest(name: &str) -> Option<&'static str> {
    let limit = (name.chars().count() / 3).max(1);
    OPS.iter()
        .map(|row| (edit_distance(name, row.name), row.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// The Levenshtein distance between two names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The message for a call of an op the table does not have.
pub fn unknown_op_message(name: &str) -> String {
    let mut msg = format!("unknown op `{name}` in a `#[graph]` body");
    if let Some(near) = nearest(name) {
        let _ = write!(msg, "; did you mean `{near}`?");
    }
    msg.push_str(" (the ops are listed in grafo's docs/OPS.md)");
    msg
}

/// `docs/OPS.md`, the op reference, rendered from [`OPS`].
pub fn ops_markdown() -> String {
    let mut md = String::new();
    md.push_str("# grafo op reference\n\n");
    md.push_str(
        "Generated from the op table in `graph-compiler/src/ops.rs` (do not edit by hand: run\n\
         `GRAFO_BLESS_OPS=1 cargo test -p graph-compiler ops_md`). Every op is called by its\n\
         plain name inside a `#[graph]` body; operands broadcast as in NumPy; a weak literal\n\
         (`0.5`, `2`) takes the dtype of the other operand. `docs/LANGUAGE-NOTES.md` says what\n\
         grafo chose where TensorFlow's behaviour needed a decision.\n\n",
    );
    md.push_str("## Operators\n\n");
    md.push_str("| operator | meaning | dtypes | TensorFlow |\n|---|---|---|---|\n");
    for (op, meaning, dtypes, tf) in OPERATORS {
        let _ = writeln!(md, "| `{op}` | {meaning} | {dtypes} | `{tf}` |");
    }
    md.push('\n');
    for family in Family::ALL {
        let rows: Vec<&OpRow> = OPS.iter().filter(|r| r.family == family).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(md, "## {}\n", family.title());
        md.push_str("| op | signature | dtypes | shape | TensorFlow |\n|---|---|---|---|---|\n");
        for r in &rows {
            let _ = writeln!(
                md,
                "| [`{}`](#{}) | `{}` | {} | {} | `{}` |",
                r.name, r.name, r.signature, r.dtypes, r.shape, r.tf
            );
        }
        md.push('\n');
        for r in &rows {
            let _ = writeln!(
                md,
                "### {}\n\n{}\n\n```rust\n{}\n```\n",
                r.name, r.doc, r.example
            );
        }
    }
    md
}

/// The Rust operators a body may use on tensors: the operator, its meaning, dtypes, TensorFlow op.
const OPERATORS: &[(&str, &str, &str, &str)] = &[
    ("a + b", "elementwise sum", NUMBER, "tf.math.add"),
    (
        "a - b",
        "elementwise difference",
        NUMBER,
        "tf.math.subtract",
    ),
    ("a * b", "elementwise product", NUMBER, "tf.math.multiply"),
    (
        "a / b",
        "elementwise quotient (integers divide as Rust does)",
        NUMBER,
        "tf.math.divide / tf.math.truncatediv",
    ),
    ("-a", "negation", NUMBER, "tf.math.negative"),
    (
        "x[s![.., t, 0..10;2]]",
        "indexing and slicing with ndarray's `s!`: an index drops the axis, negative counts from the end, a negative step walks the range backwards as ndarray does; `t` may be a run-time integer",
        ANY,
        "x[...] (tf.strided_slice)",
    ),
    (
        "a < b, a <= b, a > b, a >= b, a == b, a != b",
        "comparison, a bool tensor",
        ANY,
        "tf.math.less ...",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in OPS.iter().enumerate() {
            assert!(
                OPS[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
        }
    }

    #[test]
    fn nearest_names() {
        assert_eq!(nearest("reduce_summ"), Some("reduce_sum"));
        assert_eq!(nearest("sofmax"), Some("softmax"));
        assert_eq!(nearest("matmull"), Some("matmul"));
        assert_eq!(nearest("frobnicate"), None);
    }

    /// `docs/OPS.md` is the rendering of the table; `GRAFO_BLESS_OPS=1` rewrites it.
    #[test]
    fn ops_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/OPS.md");
        let rendered = ops_markdown();
        if std::env::var_os("GRAFO_BLESS_OPS").is_some() {
            std::fs::write(&path, &rendered).expect("write docs/OPS.md");
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == rendered,
            "docs/OPS.md is not the rendering of the op table: run `GRAFO_BLESS_OPS=1 cargo test -p graph-compiler ops_md`"
        );
    }
}
