//! Names of TensorFlow, Keras, PyTorch and NumPy ops that grafo lacks, each with what to write instead: the unknown-op message gives that, never a near name of another meaning (`relu6` once got "did you mean `relu`", which compiles and computes something else).

/// One op grafo lacks under this name: what to write instead, or `None` when grafo has no
/// equivalent yet.
pub struct Foreign {
    pub name: &'static str,
    pub instead: Option<&'static str>,
}

const fn instead(name: &'static str, text: &'static str) -> Foreign {
    Foreign {
        name,
        instead: Some(text),
    }
}

const fn missing(name: &'static str) -> Foreign {
    Foreign {
        name,
        instead: None,
    }
}

/// The names, each one a near name of a grafo op of another meaning or a common spelling
/// a port from another framework brings. A row of an op grafo adds later must go (a test
/// checks that no row names an op of the table).
pub const FOREIGN: &[Foreign] = &[
    // Activations.
    instead("selu", "`1.0507009873554805 * select(x > 0.0, x, 1.6732632423543772 * expm1(x))` (TF's selu)"),
    instead("celu", "`maximum(x, 0.0) + minimum(alpha * expm1(x / alpha), 0.0)` (PyTorch's celu)"),
    instead("prelu", "`select(x > 0.0, x, alpha * x)` with `alpha` a tensor of the learned slopes"),
    instead("mish", "`x * tanh(softplus(x))`"),
    instead("softmin", "`softmax(-x, axis)`"),
    instead("log_sigmoid", "`-softplus(-x)`"),
    instead("logsigmoid", "`-softplus(-x)`"),
    instead("hardtanh", "`clip_by_value(x, -1.0, 1.0)`"),
    // Elementwise math.
    instead("tan", "`sin(x) / cos(x)`"),
    instead("sinh", "`(exp(x) - exp(-x)) * 0.5`"),
    instead("cosh", "`(exp(x) + exp(-x)) * 0.5`"),
    missing("asin"),
    missing("acos"),
    missing("atan"),
    missing("atan2"),
    missing("asinh"),
    missing("acosh"),
    missing("atanh"),
    instead("erfc", "`1.0 - erf(x)` (which loses the tail's precision beyond x of about 4)"),
    instead("log2", "`log(x) * f32::consts::LOG2_E` (to rounding)"),
    instead("log10", "`log(x) * f32::consts::LOG10_E` (to rounding)"),
    instead("exp2", "`exp(x * f32::consts::LN_2)` (to rounding)"),
    instead("clamp", "`clip_by_value(x, lo, hi)`"),
    instead("clip", "`clip_by_value(x, lo, hi)`"),
    instead("where", "`select(cond, a, b)`"),
    // Reductions.
    instead("sum", "`reduce_sum(x, axis)`"),
    instead("mean", "`reduce_mean(x, axis)`"),
    instead("max", "`reduce_max(x, axis)` to reduce, `maximum(a, b)` elementwise"),
    instead("min", "`reduce_min(x, axis)` to reduce, `minimum(a, b)` elementwise"),
    instead("amax", "`reduce_max(x, axis)`"),
    instead("amin", "`reduce_min(x, axis)`"),
    instead("reduce_variance", "`reduce_mean(square(x - reduce_mean(x, axis, true)), axis)`"),
    instead("var", "`reduce_mean(square(x - reduce_mean(x, axis, true)), axis)` (TF's reduce_variance; PyTorch's var divides by n - 1)"),
    instead("reduce_std", "`sqrt(reduce_mean(square(x - reduce_mean(x, axis, true)), axis))`"),
    instead("std", "`sqrt(reduce_mean(square(x - reduce_mean(x, axis, true)), axis))` (TF's reduce_std; PyTorch's std divides by n - 1)"),
    instead("reduce_logsumexp", "`m + log(reduce_sum(exp(x - m), axis, true))` with `let m = reduce_max(x, axis, true);`"),
    instead("logsumexp", "`m + log(reduce_sum(exp(x - m), axis, true))` with `let m = reduce_max(x, axis, true);`"),
    // Shapes and assembly.
    instead("cat", "`concat([a, b], axis)`"),
    instead("unsqueeze", "`expand_dims(x, axis)`"),
    instead("permute", "`transpose(x, [perm])`"),
    instead("view", "`reshape(x, [dims])`"),
    instead("flatten", "`reshape(x, [B, -1])`"),
    instead("zeros_like", "`zeros([dims])` with the dims of `x` (symbols too)"),
    instead("ones_like", "`ones([dims])` with the dims of `x` (symbols too)"),
    // Linear algebra and networks.
    instead("mm", "`matmul(a, b)`"),
    instead("bmm", "`matmul(a, b)` (it takes batched operands)"),
    instead("linear", "`matmul(x, w) + b` (`w` is [in, out], the transpose of PyTorch's weight)"),
    instead("conv1d", "`squeeze(conv2d(expand_dims(x, 1), expand_dims(k, 0), stride, padding), [1])` (an NWC input, a [K, in, out] filter)"),
    missing("conv3d"),
    instead("max_pool1d", "`squeeze(max_pool2d(expand_dims(x, 1), [1, k], [1, s], padding), [1])` (an NWC input)"),
    instead("avg_pool1d", "`squeeze(avg_pool2d(expand_dims(x, 1), [1, k], [1, s], padding), [1])` (an NWC input)"),
    missing("max_pool3d"),
    missing("avg_pool3d"),
    instead("instance_norm", "`layer_norm(x, gamma, beta, [1, 2], epsilon)` on an NHWC `x`"),
    instead("group_norm", "`reshape` NHWC to [B, H, W, G, C / G], `layer_norm` over `[1, 2, 4]`, `reshape` back"),
    instead("dropout", "the value itself at inference (grafo has no random ops)"),
];

/// The row of `name`, if it is a foreign name grafo knows.
pub fn foreign(name: &str) -> Option<&'static Foreign> {
    FOREIGN.iter().find(|f| f.name == name)
}
