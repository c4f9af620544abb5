//! The op table: one row per op of the `#[graph]` language (name, signature, dtypes, shape rule, doc line, TensorFlow equivalent, example), from which the unknown-op message and `docs/OPS.md` are derived.
//!
//! The row types are here; `table.rs` is the table, `lookup.rs` finds rows (and the nearest
//! name for a typo), `foreign.rs` lists other frameworks' names grafo lacks with what to
//! write instead, `markdown.rs` renders `docs/OPS.md`.

use crate::ir::{AssertKind, BinaryOp, PoolKind, ReduceKind, UnaryOp};
use crate::lower::{Loss, Optimizer};
use std::fmt::Write as _;

mod foreign;
mod lookup;
mod markdown;
mod table;
#[cfg(test)]
mod tests;

pub use lookup::{eager_operands_fn, lookup, nearest, unknown_op_message};
pub use markdown::ops_markdown;
pub use table::OPS;

/// The family an op belongs to; `docs/OPS.md` has one section per family, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Create,
    Elementwise,
    Reduce,
    Linalg,
    Nn,
    Selection,
    Train,
    Check,
}

impl Family {
    pub const ALL: [Family; 8] = [
        Family::Create,
        Family::Elementwise,
        Family::Reduce,
        Family::Linalg,
        Family::Nn,
        Family::Selection,
        Family::Train,
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
            Family::Train => "Training",
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
    /// Its arguments in order; the optional ones last.
    pub args: &'static [ArgSpec],
    /// Whether it takes a dtype in turbofish form (`cast::<f32>(x)`).
    pub type_param: TypeParam,
    /// The operator form, where there is one (`a % b`).
    pub alias: Option<&'static str>,
    /// Which lowering of its family builds its nodes.
    pub lowering: Lowering,
    /// What its eager twin calls.
    pub eager: Eager,
    /// The element types it accepts.
    pub dtypes: &'static str,
    /// Its shape rule.
    pub shape: &'static str,
    /// One line saying what it computes.
    pub doc: &'static str,
    /// The TensorFlow op it follows.
    pub tf: &'static str,
    /// How `gradients` differentiates it (the rule in `lower/autodiff/rules.rs`), or that it does not.
    pub grad: &'static str,
    /// A line of a `#[graph]` body using it.
    pub example: &'static str,
}

/// One argument of an op: its name (as the signature shows it), its kind and whether it may be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub need: Need,
    /// What the messages call it where the kind alone says too little (`an NHWC tensor`).
    pub note: Option<&'static str>,
}

impl ArgSpec {
    /// The same argument, described as `note` in the messages.
    const fn note(self, note: &'static str) -> ArgSpec {
        ArgSpec {
            note: Some(note),
            ..self
        }
    }

    /// What the messages say it must be.
    pub fn phrase(&self) -> &'static str {
        self.note.unwrap_or(self.kind.phrase())
    }
}

/// Whether an argument must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Required,
    Optional,
    /// Optional, but given exactly when the argument before it is (`one_hot`'s `on, off`).
    WithPrevious,
}

/// What an argument is; the lowering checks the syntactic kinds (lists, literals) before the op's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any tensor expression (a literal or a host scalar included).
    Tensor,
    /// A scalar tensor or literal (`alpha`, a fill value).
    Scalar,
    /// A list of tensors `[a, b, ...]`.
    Tensors,
    /// An integer literal or `const` axis.
    Axis,
    /// An axis or a list of axes `[0, 1]`.
    Axes,
    /// A list of integer literals (`[begin]`, a permutation).
    Ints,
    /// A shape list `[B, 784]` (literals, symbols, products).
    Dims,
    /// A list of `[before, after]` pairs.
    Pads,
    /// A pooling window, stride or dilation: `k`, `[rows, columns]` or `[1, rows, columns, 1]`.
    Window,
    /// An integer literal or `const`.
    Int,
    /// A number of pieces or a list of sizes (`split`).
    Count,
    /// A number known at compile time, a `for` variable or a symbolic dim (`range`).
    Number,
    /// The literal `true` or `false`.
    Bool,
    /// `SAME` or `VALID`.
    Padding,
    /// `SAME`, `VALID`, or TF's explicit padding (`conv2d`, `depthwise_conv2d`, `max_pool2d`).
    PaddingOrPads,
    /// `NEAREST` or `BILINEAR` (`resize`).
    ResizeMethod,
    /// A string literal.
    Message,
    /// A tensor or a tuple of tensors `(a, b, ...)` (what `gradients` differentiates with respect to).
    Wrt,
    /// A bit mask: an integer literal or `const`, bits combined with `|` and `<<`
    /// (`strided_slice`'s masks, checked by its lowering).
    Mask,
}

impl Kind {
    /// What an argument of this kind is, as the messages say it.
    pub fn phrase(self) -> &'static str {
        match self {
            Kind::Tensor => "a tensor",
            Kind::Scalar => "a scalar",
            Kind::Tensors => "a list of tensors `[a, b, ...]`",
            Kind::Axis => "an integer literal axis",
            Kind::Axes => "an integer literal axis or a list of them (`[0, 1]`)",
            Kind::Ints => "a list of integer literals (`[0, 2]`)",
            Kind::Dims => "a shape list such as `[B, 784]`",
            Kind::Pads => "a list of `[before, after]` pairs",
            Kind::Window => "an integer literal, `[rows, columns]` or `[1, rows, columns, 1]`",
            Kind::Int => "an integer literal or `const`",
            Kind::Count => "a number of pieces or a list of sizes",
            Kind::Number => "a number",
            Kind::Bool => "the literal `true` or `false`",
            Kind::Padding => "`SAME` or `VALID`",
            Kind::PaddingOrPads => {
                "`SAME`, `VALID` or TF's explicit `[[top, bottom], [left, right]]`"
            }
            Kind::ResizeMethod => "`NEAREST` or `BILINEAR` (TF's `ResizeMethod`s without antialiasing; the others are not supported)",
            Kind::Message => "a string literal",
            Kind::Wrt => "a tensor or a tuple of tensors `(a, b, ...)`",
            Kind::Mask => {
                "a non-negative integer literal or `const` (bits combined with `|` and `<<`)"
            }
        }
    }

    /// How the signature shows an argument of this kind called `name`.
    fn shown(self, name: &'static str) -> String {
        match self {
            Kind::Tensors => "[a, b, ...]".into(),
            Kind::Axes => "axis or [axes]".into(),
            Kind::Ints | Kind::Dims => format!("[{name}]"),
            Kind::Pads => "[[before, after], ...]".into(),
            Kind::Count => "n | [sizes]".into(),
            Kind::Message => "\"msg\"".into(),
            Kind::Wrt => "x or (x1, x2, ...)".into(),
            _ => name.into(),
        }
    }
}

/// Whether an op takes a dtype in turbofish form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeParam {
    None,
    Optional,
    Required,
}

/// The lowering that builds an op's nodes; each family module of `lower` handles its variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lowering {
    Constant,
    Zeros,
    Ones,
    Fill,
    Unary(UnaryOp),
    Binary(BinaryOp),
    Select,
    Cast,
    Gelu,
    LeakyRelu,
    /// An activation written in other elementwise ops (`lower/activations.rs`).
    Activation(Activation),
    ClipByValue,
    Reduce(ReduceKind),
    /// `reduce_any` (`any`) and `reduce_all` over a bool tensor.
    ReduceBool {
        any: bool,
    },
    Cumsum,
    TopK,
    Norm,
    MatMul,
    Transpose,
    Reshape,
    BandPart,
    Conv2d {
        depthwise: bool,
    },
    Conv2dTranspose,
    BiasAdd,
    Pool(PoolKind),
    Resize,
    Softmax {
        log: bool,
    },
    BatchNormalization,
    LayerNorm,
    Selection(Selection),
    Gradients,
    StopGradient,
    Loss(Loss),
    Optimizer(Optimizer),
    Assert(AssertKind),
}

/// The activations that are composites of other elementwise ops (Keras' definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `relu6(x + 3) / 6`.
    HardSigmoid,
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `x * sigmoid(x)` (`silu` and `swish`).
    Silu,
    /// `x / (1 + |x|)`.
    Softsign,
}

/// The selection and assembly ops, lowered by `lower/selection.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    Slice,
    StridedSlice,
    Concat,
    Stack,
    Split,
    Tile,
    Pad,
    ExpandDims,
    Squeeze,
    Gather,
    OneHot,
    ArgMax,
    ArgMin,
    Range,
}

/// What an op's eager twin (`NAME::eager`) calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eager {
    /// `grafo::eager::NAME` on the operands' views, nothing else: `emit/eager.rs` renders it from the row.
    Operands(&'static str),
    /// `grafo::eager::NAME` with the op's attributes (axes, strides, a dtype, the source line)
    /// rendered by `emit/eager.rs`'s arm for the op.
    Custom(&'static str),
    /// A literal array (`ndarray::arr0`).
    Literal,
    /// None of its own: the op is lowered into other ops, each with its eager twin.
    Composite,
}

impl Eager {
    /// The `grafo::eager` function, if the twin calls one of its own.
    pub fn function(self) -> Option<&'static str> {
        match self {
            Eager::Operands(f) | Eager::Custom(f) => Some(f),
            Eager::Literal | Eager::Composite => None,
        }
    }
}

impl OpRow {
    /// The call form derived from the arguments, optional ones in brackets:
    /// `reduce_sum(x [, axis or [axes] [, keep_dims]])`.
    pub fn signature(&self) -> String {
        let mut s = self.call_form();
        if self.type_param == TypeParam::Optional {
            let typed = s.replacen('(', "::<T>(", 1);
            s = format!("{s} / {typed}");
        }
        if let Some(alias) = self.alias {
            let _ = write!(s, " / {alias}");
        }
        s
    }

    /// The plain call form the messages show: `one_hot(indices, depth [, on, off])`.
    pub fn call_form(&self) -> String {
        let mut s = String::from(self.name);
        if self.type_param == TypeParam::Required {
            s.push_str("::<T>");
        }
        s.push('(');
        let mut open = 0;
        for (i, a) in self.args.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            match a.need {
                Need::Optional => {
                    s.push_str(if i == 0 { "[" } else { " [" });
                    s.push_str(sep);
                    open += 1;
                }
                Need::Required | Need::WithPrevious => s.push_str(sep),
            }
            s.push_str(&a.kind.shown(a.name));
        }
        s.push_str(&"]".repeat(open));
        s.push(')');
        s
    }

    /// Whether a call with `n` arguments has a valid count.
    pub fn accepts(&self, n: usize) -> bool {
        let required = self
            .args
            .iter()
            .filter(|a| a.need == Need::Required)
            .count();
        n >= required
            && n <= self.args.len()
            && self
                .args
                .get(n)
                .is_none_or(|next| next.need != Need::WithPrevious)
    }

    /// The message for a call with `found` arguments, which [`OpRow::accepts`] refused.
    pub fn arity_message(&self, found: usize) -> String {
        let counts: Vec<usize> = (0..=self.args.len()).filter(|&n| self.accepts(n)).collect();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let count = match counts.as_slice() {
            [n] => format!("{n} argument{}", plural(*n)),
            [a, b] => format!("{a} or {b} arguments"),
            [a, .., b] => format!("{a} to {b} arguments"),
            [] => unreachable!("every op accepts its full argument list"),
        };
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| format!("`{}` is {}", a.name, a.phrase()))
            .collect();
        format!(
            "`{}` takes {count}, `{}` where {}; found {found}, e.g. `{}`",
            self.name,
            self.call_form(),
            args.join(", "),
            self.example
        )
    }

    /// The message for argument `arg` not being of its kind.
    pub fn kind_message(&self, arg: &ArgSpec) -> String {
        format!(
            "`{}`'s `{}` must be {}, in `{}`",
            self.name,
            arg.name,
            arg.phrase(),
            self.call_form()
        )
    }
}
