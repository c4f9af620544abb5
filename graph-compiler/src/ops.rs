//! The op table: one row per op of the `#[graph]` language (name, signature, dtypes, shape rule, doc line, TensorFlow equivalent, example), from which the unknown-op message and `docs/OPS.md` are derived.

use crate::ir::{AssertKind, BinaryOp, Op, PoolKind, ReduceKind, UnaryOp};
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
    /// A string literal.
    Message,
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
            Kind::Message => "a string literal",
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
    ClipByValue,
    Reduce(ReduceKind),
    Norm,
    MatMul,
    Transpose,
    Reshape,
    Conv2d { depthwise: bool },
    BiasAdd,
    Pool(PoolKind),
    Softmax { log: bool },
    BatchNormalization,
    LayerNorm,
    Selection(Selection),
    Assert(AssertKind),
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

const fn req(name: &'static str, kind: Kind) -> ArgSpec {
    ArgSpec {
        name,
        kind,
        need: Need::Required,
        note: None,
    }
}

const fn opt(name: &'static str, kind: Kind) -> ArgSpec {
    ArgSpec {
        name,
        kind,
        need: Need::Optional,
        note: None,
    }
}

const fn with_previous(name: &'static str, kind: Kind) -> ArgSpec {
    ArgSpec {
        name,
        kind,
        need: Need::WithPrevious,
        note: None,
    }
}

/// One tensor `x`.
const X: &[ArgSpec] = &[req("x", Kind::Tensor)];
/// Two tensors `a, b`.
const AB: &[ArgSpec] = &[req("a", Kind::Tensor), req("b", Kind::Tensor)];
/// `conv2d` and `depthwise_conv2d`.
const CONV: &[ArgSpec] = &[
    req("x", Kind::Tensor).note("an NHWC input"),
    req("k", Kind::Tensor).note("the kernel"),
    req("stride", Kind::Int).note("a positive integer literal"),
    req("padding", Kind::Padding),
    opt("dilations", Kind::Window),
];
/// The pooling ops.
const POOL: &[ArgSpec] = &[
    req("x", Kind::Tensor).note("an NHWC input"),
    req("ksize", Kind::Window),
    req("strides", Kind::Window),
    req("padding", Kind::Padding),
];

const NUMBER: &str = "f32 f64 i32 i64";
const FLOAT: &str = "f32 f64";
const ANY: &str = "f32 f64 i32 i64 bool";
const SAME_SHAPE: &str = "same as `x`";
const BROADCAST: &str = "NumPy broadcast of the operands";

macro_rules! unary {
    ($name:literal, $op:ident, $dtypes:expr, $doc:literal, $tf:literal) => {
        OpRow {
            name: $name,
            family: Family::Elementwise,
            args: X,
            type_param: TypeParam::None,
            alias: None,
            lowering: Lowering::Unary(UnaryOp::$op),
            eager: Eager::Operands($name),
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
        args: &[
            req("v", Kind::Scalar).note("a literal or `const`, or nested array literals of them (`[[1.0, 2.0], [3.0, 4.0]]`, `[0.5; 4]`)"),
            opt("shape", Kind::Dims).note("TF's `shape`: fills it with a scalar `v`, or reshapes an array of as many values"),
        ],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Constant,
        eager: Eager::Literal,
        dtypes: ANY,
        shape: "[] for a scalar; an array literal's nesting (`[[1, 2, 3], [4, 5, 6]]` is [2, 3]); `shape` when given",
        doc: "A constant: a scalar or nested array literals, as `tf.constant`. The dtype is the turbofish's, else that of the suffixed or bool elements (which must agree), else f32 when any element is a float literal, else i32.",
        tf: "tf.constant",
        example: "let w = constant([[1.0, 0.0], [0.0, -1.0]]);",
    },
    OpRow {
        name: "zeros",
        family: Family::Create,
        args: &[req("dims", Kind::Dims)],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Zeros,
        eager: Eager::Custom("fill"),
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor of zeros, f32 unless turbofished.",
        tf: "tf.zeros",
        example: "let z = zeros([B, 10]);",
    },
    OpRow {
        name: "ones",
        family: Family::Create,
        args: &[req("dims", Kind::Dims)],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Ones,
        eager: Eager::Custom("fill"),
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor of ones, f32 unless turbofished.",
        tf: "tf.ones",
        example: "let o = ones::<i32>([3]);",
    },
    OpRow {
        name: "fill",
        family: Family::Create,
        args: &[req("dims", Kind::Dims), req("v", Kind::Scalar)],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Fill,
        eager: Eager::Custom("fill"),
        dtypes: ANY,
        shape: "the listed dims (literals or symbols)",
        doc: "A tensor filled with the scalar `v`, of `v`'s dtype.",
        tf: "tf.fill",
        example: "let f = fill([4, 4], 0.5);",
    },
    // Elementwise.
    unary!(
        "abs", Abs,
        NUMBER,
        "Absolute value (wraps for the integer minimum).",
        "tf.math.abs"
    ),
    unary!("exp", Exp, FLOAT, "e to the power x.", "tf.math.exp"),
    unary!(
        "log", Log,
        FLOAT,
        "Natural logarithm (NaN below 0, -inf at 0).",
        "tf.math.log"
    ),
    unary!("sqrt", Sqrt, FLOAT, "Square root.", "tf.math.sqrt"),
    unary!("rsqrt", Rsqrt, FLOAT, "1 / sqrt(x).", "tf.math.rsqrt"),
    unary!("square", Square, NUMBER, "x * x.", "tf.math.square"),
    unary!("tanh", Tanh, FLOAT, "Hyperbolic tangent.", "tf.math.tanh"),
    unary!("sigmoid", Sigmoid, FLOAT, "1 / (1 + exp(-x)).", "tf.math.sigmoid"),
    unary!("relu", Relu, NUMBER, "max(x, 0); NaN stays NaN.", "tf.nn.relu"),
    unary!("sin", Sin, FLOAT, "Sine.", "tf.math.sin"),
    unary!("cos", Cos, FLOAT, "Cosine.", "tf.math.cos"),
    unary!(
        "neg", Neg,
        NUMBER,
        "-x (also the unary `-` operator).",
        "tf.math.negative"
    ),
    OpRow {
        name: "pow",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::Pow),
        eager: Eager::Operands("pow"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a to the power b; integers multiply with wrapping over the whole exponent, a negative integer exponent is `Error::Arithmetic`.",
        tf: "tf.math.pow",
        example: "let y = pow(x, 3.0);",
    },
    OpRow {
        name: "maximum",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::Maximum),
        eager: Eager::Operands("maximum"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The larger of a and b; NaN propagates.",
        tf: "tf.math.maximum",
        example: "let y = maximum(x, 0.0);",
    },
    OpRow {
        name: "minimum",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::Minimum),
        eager: Eager::Operands("minimum"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The smaller of a and b; NaN propagates.",
        tf: "tf.math.minimum",
        example: "let y = minimum(x, 6.0);",
    },
    OpRow {
        name: "select",
        family: Family::Elementwise,
        args: &[req("cond", Kind::Tensor), req("a", Kind::Tensor), req("b", Kind::Tensor)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Select,
        eager: Eager::Operands("select"),
        dtypes: "cond bool; a, b any one dtype",
        shape: "NumPy broadcast of the three operands",
        doc: "a where cond is true, b elsewhere.",
        tf: "tf.where",
        example: "let y = select(x > 0.0, x, 0.1 * x);",
    },
    OpRow {
        name: "cast",
        family: Family::Elementwise,
        args: X,
        type_param: TypeParam::Required,
        alias: None,
        lowering: Lowering::Cast,
        eager: Eager::Custom("cast"),
        dtypes: ANY,
        shape: SAME_SHAPE,
        doc: "x converted to T (Rust `as` semantics: floats to integers saturate, NaN gives 0).",
        tf: "tf.cast",
        example: "let y = cast::<f32>(n);",
    },
    unary!(
        "erf", Erf,
        FLOAT,
        "The error function (branch-free, vectorised; f32 within 2 ulp).",
        "tf.math.erf"
    ),
    OpRow {
        name: "truncatediv",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::TruncateDiv),
        eager: Eager::Operands("truncatediv"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a / b rounded toward zero (integer `/` is the same); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.truncatediv",
        example: "let q = truncatediv(n, 3);",
    },
    OpRow {
        name: "truncatemod",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: Some("a % b"),
        lowering: Lowering::Binary(BinaryOp::TruncateMod),
        eager: Eager::Operands("truncatemod"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The remainder of truncatediv, with the sign of a (Rust's `%`; fmod for floats); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.truncatemod",
        example: "let r = n % 3;",
    },
    OpRow {
        name: "floordiv",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::FloorDiv),
        eager: Eager::Operands("floordiv"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "a / b rounded toward negative infinity (floor(a / b) for floats); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.floordiv",
        example: "let q = floordiv(n, 4);",
    },
    OpRow {
        name: "floormod",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Binary(BinaryOp::FloorMod),
        eager: Eager::Operands("floormod"),
        dtypes: NUMBER,
        shape: BROADCAST,
        doc: "The remainder of floordiv, with the sign of b (TensorFlow's `%` on tensors); an integer zero divisor is `Error::Arithmetic`.",
        tf: "tf.math.floormod",
        example: "let r = floormod(n, 4);",
    },
    OpRow {
        name: "clip_by_value",
        family: Family::Elementwise,
        args: &[req("x", Kind::Tensor), req("lo", Kind::Tensor), req("hi", Kind::Tensor)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::ClipByValue,
        eager: Eager::Composite,
        dtypes: NUMBER,
        shape: "same as `x` (lo and hi broadcast to it)",
        doc: "maximum(minimum(x, hi), lo); NaN stays NaN.",
        tf: "tf.clip_by_value",
        example: "let y = clip_by_value(x, 0.0, 6.0);",
    },
    OpRow {
        name: "logical_and",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: Some("a & b"),
        lowering: Lowering::Binary(BinaryOp::LogicalAnd),
        eager: Eager::Operands("logical_and"),
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a and b.",
        tf: "tf.math.logical_and",
        example: "let m = (x > 0.0) & (x < 1.0);",
    },
    OpRow {
        name: "logical_or",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: Some("a | b"),
        lowering: Lowering::Binary(BinaryOp::LogicalOr),
        eager: Eager::Operands("logical_or"),
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a or b.",
        tf: "tf.math.logical_or",
        example: "let m = logical_or(x < 0.0, x > 1.0);",
    },
    OpRow {
        name: "logical_xor",
        family: Family::Elementwise,
        args: AB,
        type_param: TypeParam::None,
        alias: Some("a ^ b"),
        lowering: Lowering::Binary(BinaryOp::LogicalXor),
        eager: Eager::Operands("logical_xor"),
        dtypes: "bool",
        shape: BROADCAST,
        doc: "a or b but not both.",
        tf: "tf.math.logical_xor",
        example: "let m = p ^ q;",
    },
    OpRow {
        name: "logical_not",
        family: Family::Elementwise,
        args: X,
        type_param: TypeParam::None,
        alias: Some("!x"),
        lowering: Lowering::Unary(UnaryOp::LogicalNot),
        eager: Eager::Operands("logical_not"),
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
        args: &[req("x", Kind::Tensor), opt("axes", Kind::Axes), opt("keep_dims", Kind::Bool)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Reduce(ReduceKind::Sum),
        eager: Eager::Custom("reduce_sum"),
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Sum over the axes (negative axes count from the end).",
        tf: "tf.math.reduce_sum",
        example: "let s = reduce_sum(x, -1, true);",
    },
    OpRow {
        name: "reduce_mean",
        family: Family::Reduce,
        args: &[req("x", Kind::Tensor), opt("axes", Kind::Axes), opt("keep_dims", Kind::Bool)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Reduce(ReduceKind::Mean),
        eager: Eager::Custom("reduce_mean"),
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Mean over the axes.",
        tf: "tf.math.reduce_mean",
        example: "let m = reduce_mean(x, [0, 1]);",
    },
    OpRow {
        name: "reduce_max",
        family: Family::Reduce,
        args: &[req("x", Kind::Tensor), opt("axes", Kind::Axes), opt("keep_dims", Kind::Bool)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Reduce(ReduceKind::Max),
        eager: Eager::Custom("reduce_max"),
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Maximum over the axes; NaN propagates.",
        tf: "tf.math.reduce_max",
        example: "let m = reduce_max(x, 1);",
    },
    OpRow {
        name: "reduce_min",
        family: Family::Reduce,
        args: &[req("x", Kind::Tensor), opt("axes", Kind::Axes), opt("keep_dims", Kind::Bool)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Reduce(ReduceKind::Min),
        eager: Eager::Custom("reduce_min"),
        dtypes: NUMBER,
        shape: "x without the reduced axes (kept as 1 with keep_dims); all axes by default",
        doc: "Minimum over the axes; NaN propagates.",
        tf: "tf.math.reduce_min",
        example: "let m = reduce_min(x);",
    },
    OpRow {
        name: "norm",
        family: Family::Reduce,
        args: X,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Norm,
        eager: Eager::Operands("norm"),
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
        args: AB,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::MatMul,
        eager: Eager::Custom("matmul"),
        dtypes: NUMBER,
        shape: "[.., M, K] x [.., K, N] -> [.., M, N]; the leading (batch) axes broadcast as NumPy's `@`",
        doc: "Matrix product over the last two axes, batched over the others; an operand transposed over its last two axes (`matmul(transpose(a), b)`, `matmul(a, transpose(b))`, or both) is read in place.",
        tf: "tf.linalg.matmul",
        example: "let scores = matmul(q, transpose(k, [0, 1, 3, 2]));",
    },
    OpRow {
        name: "transpose",
        family: Family::Linalg,
        args: &[req("x", Kind::Tensor), opt("perm", Kind::Ints)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Transpose,
        eager: Eager::Custom("transpose"),
        dtypes: ANY,
        shape: "x's dims permuted (reversed by default)",
        doc: "Permutes the axes.",
        tf: "tf.transpose",
        example: "let t = transpose(x, [0, 2, 1]);",
    },
    OpRow {
        name: "reshape",
        family: Family::Linalg,
        args: &[req("x", Kind::Tensor), req("dims", Kind::Dims)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Reshape,
        eager: Eager::Custom("reshape"),
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
        args: CONV,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Conv2d { depthwise: false },
        eager: Eager::Custom("conv2d"),
        dtypes: NUMBER,
        shape: "x [N, H, W, C] (NHWC), k [KH, KW, C, F] (HWIO) -> [N, H', W', F]; a dilation d spans (KH - 1) * d + 1 rows",
        doc: "2-D convolution with TensorFlow's padding rule; `dilations` is `d`, `[dh, dw]` or `[1, dh, dw, 1]`.",
        tf: "tf.nn.conv2d",
        example: "let y = relu(conv2d(x, k, 1, SAME) + b);",
    },
    OpRow {
        name: "bias_add",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), req("b", Kind::Tensor)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::BiasAdd,
        eager: Eager::Operands("bias_add"),
        dtypes: NUMBER,
        shape: "x [.., C], b [C] -> x's shape",
        doc: "Adds a bias along the last axis.",
        tf: "tf.nn.bias_add",
        example: "let y = bias_add(matmul(x, w), b);",
    },
    OpRow {
        name: "depthwise_conv2d",
        family: Family::Nn,
        args: CONV,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Conv2d { depthwise: true },
        eager: Eager::Custom("depthwise_conv2d"),
        dtypes: FLOAT,
        shape: "x [N, H, W, C] (NHWC), k [KH, KW, C, M] -> [N, H', W', C*M] (channel c*M + m)",
        doc: "Each input channel convolved with its own M filters, TensorFlow's padding rule.",
        tf: "tf.nn.depthwise_conv2d",
        example: "let y = relu(depthwise_conv2d(x, k, 1, SAME) + b);",
    },
    OpRow {
        name: "max_pool2d",
        family: Family::Nn,
        args: POOL,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Pool(PoolKind::Max),
        eager: Eager::Custom("max_pool2d"),
        dtypes: NUMBER,
        shape: "x [N, H, W, C] (NHWC) -> [N, H', W', C]; SAME: ceil(H / stride), VALID: (H - k) / stride + 1",
        doc: "The maximum of each window (padding never wins; NaN propagates); `ksize`/`strides` are `k`, `[kh, kw]` or `[1, kh, kw, 1]`.",
        tf: "tf.nn.max_pool2d",
        example: "let p = max_pool2d(relu(conv2d(x, k, 1, SAME) + b), 2, 2, VALID);",
    },
    OpRow {
        name: "avg_pool2d",
        family: Family::Nn,
        args: POOL,
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Pool(PoolKind::Avg),
        eager: Eager::Custom("avg_pool2d"),
        dtypes: FLOAT,
        shape: "x [N, H, W, C] (NHWC) -> [N, H', W', C]; SAME: ceil(H / stride), VALID: (H - k) / stride + 1",
        doc: "The mean of each window's valid (unpadded) elements, as TF divides.",
        tf: "tf.nn.avg_pool2d",
        example: "let p = avg_pool2d(x, [3, 3], [2, 2], SAME);",
    },
    OpRow {
        name: "softmax",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Softmax { log: false },
        eager: Eager::Custom("softmax"),
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "exp(x) / sum(exp(x)) along the axis, computed stably.",
        tf: "tf.nn.softmax",
        example: "let p = softmax(logits, -1);",
    },
    OpRow {
        name: "log_softmax",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Softmax { log: true },
        eager: Eager::Custom("log_softmax"),
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
        args: &[req("x", Kind::Tensor), req("begin", Kind::Ints), req("size", Kind::Ints).note("a list of integer literals (-1 takes the rest of the axis)")],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Slice),
        eager: Eager::Custom("slice_as"),
        dtypes: ANY,
        shape: "one dim per `size` (-1: the rest of the axis); 0 <= begin <= begin + size <= dim",
        doc: "The block of `x` starting at `begin` with `size` elements per axis.",
        tf: "tf.slice",
        example: "let crop = slice(x, [0, 2], [-1, 5]);",
    },
    OpRow {
        name: "strided_slice",
        family: Family::Selection,
        args: &[
            req("x", Kind::Tensor),
            req("begin", Kind::Ints),
            req("end", Kind::Ints),
            opt("strides", Kind::Ints),
            opt("begin_mask", Kind::Mask),
            opt("end_mask", Kind::Mask),
            opt("ellipsis_mask", Kind::Mask),
            opt("new_axis_mask", Kind::Mask),
            opt("shrink_axis_mask", Kind::Mask),
        ],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::StridedSlice),
        eager: Eager::Custom("slice_as"),
        dtypes: ANY,
        shape: "NumPy's `begin:end:stride` per entry (bounds from the end when negative, clamped; strides 1 by default); the masks as TF's, bit i for entry i: begin/end masked take the whole side, an ellipsis stands for the axes no entry reads, a new axis adds a 1, a shrunk axis is dropped",
        doc: "TF's strided slice, masks included; the masks are integers given by position after `strides`, in TF's order (trailing ones may be left out, default 0).",
        tf: "tf.strided_slice",
        example: "let last = strided_slice(x, [0, -1], [0, 0], [1, 1], 1, 1, 0, 0, 2); // x[:, -1]",
    },
    OpRow {
        name: "concat",
        family: Family::Selection,
        args: &[req("values", Kind::Tensors), req("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Concat),
        eager: Eager::Custom("concat"),
        dtypes: ANY,
        shape: "the operands agree on every axis but `axis`, whose sizes add up: to a constant, or to a multiple of one product of symbols (`B` and `B` give `B*2`; `B` and `4` is a compile error)",
        doc: "The operands joined along an existing axis.",
        tf: "tf.concat",
        example: "let ab = concat([a, b], -1);",
    },
    OpRow {
        name: "stack",
        family: Family::Selection,
        args: &[req("values", Kind::Tensors), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Stack),
        eager: Eager::Custom("concat"),
        dtypes: ANY,
        shape: "operands of one shape; a new axis of size n at `axis` (default 0)",
        doc: "The operands joined along a new axis.",
        tf: "tf.stack",
        example: "let pair = stack([a, b], 1);",
    },
    OpRow {
        name: "split",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), req("n", Kind::Count), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Split),
        eager: Eager::Custom("slice_as"),
        dtypes: ANY,
        shape: "a tuple of n equal pieces (or of the listed sizes, one of which may be -1 for the rest) along `axis` (default 0); a symbolic axis `S*c` splits into n pieces of `S*(c/n)` when n divides c",
        doc: "The pieces of `x` along `axis`; bind them with a tuple pattern.",
        tf: "tf.split",
        example: "let (z, r) = split(gates, 2, -1);",
    },
    OpRow {
        name: "tile",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), req("multiples", Kind::Ints)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Tile),
        eager: Eager::Custom("tile"),
        dtypes: ANY,
        shape: "axis k times multiples[k] (a symbolic axis only by 1)",
        doc: "`x` repeated along each axis.",
        tf: "tf.tile",
        example: "let t = tile(x, [1, 3]);",
    },
    OpRow {
        name: "pad",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), req("paddings", Kind::Pads), opt("value", Kind::Scalar)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Pad),
        eager: Eager::Custom("pad"),
        dtypes: ANY,
        shape: "axis k grows by before + after (a symbolic axis only by 0)",
        doc: "Constant padding with `value` (default 0).",
        tf: "tf.pad (mode CONSTANT)",
        example: "let p = pad(img, [[0, 0], [1, 1], [1, 1], [0, 0]]);",
    },
    OpRow {
        name: "expand_dims",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), req("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::ExpandDims),
        eager: Eager::Custom("reshape"),
        dtypes: ANY,
        shape: "a new axis of size 1 at `axis` (in -rank-1..=rank)",
        doc: "A view of `x` with one more axis of size 1.",
        tf: "tf.expand_dims",
        example: "let col = expand_dims(v, -1);",
    },
    OpRow {
        name: "squeeze",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), opt("axes", Kind::Axes)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Squeeze),
        eager: Eager::Custom("reshape"),
        dtypes: ANY,
        shape: "drops the static axes of size 1 (or the listed ones, which must be 1)",
        doc: "A view of `x` without its axes of size 1.",
        tf: "tf.squeeze",
        example: "let v = squeeze(col, [1]);",
    },
    OpRow {
        name: "gather",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), req("indices", Kind::Tensor), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::Gather),
        eager: Eager::Custom("gather"),
        dtypes: "f32 f64 i32 i64 bool; indices i32 i64",
        shape: "x's shape with `axis` replaced by the indices' shape (default axis 0)",
        doc: "The slices of `x` along `axis` at `indices`; an index out of range is an `Err` at run time.",
        tf: "tf.gather",
        example: "let rows = gather(table, ids, 0);",
    },
    OpRow {
        name: "one_hot",
        family: Family::Selection,
        args: &[req("indices", Kind::Tensor), req("depth", Kind::Int).note("a non-negative integer literal or `const`"), opt("on", Kind::Scalar), with_previous("off", Kind::Scalar)],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Selection(Selection::OneHot),
        eager: Eager::Custom("one_hot"),
        dtypes: "indices i32 i64; result f32 or the on/off dtype",
        shape: "the indices' shape plus a last axis of `depth`",
        doc: "`on` at each index and `off` elsewhere; an index outside [0, depth) gives a row of `off`.",
        tf: "tf.one_hot",
        example: "let labels = one_hot(y, 10);",
    },
    OpRow {
        name: "argmax",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::ArgMax),
        eager: Eager::Custom("argmax"),
        dtypes: "f32 f64 i32 i64; result i64",
        shape: "x's shape without `axis` (default 0)",
        doc: "The index of the largest element along `axis`; ties take the first, the first NaN wins.",
        tf: "tf.math.argmax",
        example: "let class = argmax(logits, -1);",
    },
    OpRow {
        name: "argmin",
        family: Family::Selection,
        args: &[req("x", Kind::Tensor), opt("axis", Kind::Axis)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Selection(Selection::ArgMin),
        eager: Eager::Custom("argmin"),
        dtypes: "f32 f64 i32 i64; result i64",
        shape: "x's shape without `axis` (default 0)",
        doc: "The index of the smallest element along `axis`; ties take the first, the first NaN wins.",
        tf: "tf.math.argmin",
        example: "let nearest = argmin(dist, 1);",
    },
    OpRow {
        name: "range",
        family: Family::Selection,
        args: &[req("start", Kind::Number), opt("limit", Kind::Number), opt("delta", Kind::Number)],
        type_param: TypeParam::Optional,
        alias: None,
        lowering: Lowering::Selection(Selection::Range),
        eager: Eager::Custom("range"),
        dtypes: "i32 (f32 with a float argument; `range::<T>`)",
        shape: "[n], n a literal or a symbolic dim, or TF's count for start/limit/delta",
        doc: "`range(n)` is `0, 1, ..., n - 1`; `range(start, limit [, delta])` is `start, start + delta, ...` below `limit`, as TF's range.",
        tf: "tf.range",
        example: "let steps = range(B);",
    },
    OpRow {
        name: "gelu",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), opt("approximate", Kind::Bool).note("the literal `true` (tanh form) or `false` (erf form)")],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Gelu,
        eager: Eager::Custom("gelu"),
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "0.5 * x * (1 + erf(x / sqrt(2))); `approximate` (a literal, default false) selects the tanh form.",
        tf: "tf.nn.gelu",
        example: "let h = gelu(matmul(x, w) + b);",
    },
    unary!(
        "softplus", Softplus,
        FLOAT,
        "ln(1 + exp(x)) without overflow, with TensorFlow's thresholds.",
        "tf.math.softplus"
    ),
    unary!(
        "elu", Elu,
        FLOAT,
        "x for x > 0, exp(x) - 1 otherwise.",
        "tf.nn.elu"
    ),
    OpRow {
        name: "leaky_relu",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), opt("alpha", Kind::Scalar).note("a scalar (default 0.2)")],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::LeakyRelu,
        eager: Eager::Custom("leaky_relu"),
        dtypes: FLOAT,
        shape: SAME_SHAPE,
        doc: "x for x > 0, alpha * x otherwise; alpha is a scalar, default 0.2.",
        tf: "tf.nn.leaky_relu",
        example: "let y = leaky_relu(x, 0.1);",
    },
    OpRow {
        name: "batch_normalization",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), req("mean", Kind::Tensor), req("variance", Kind::Tensor), req("offset", Kind::Tensor), req("scale", Kind::Tensor), req("variance_epsilon", Kind::Tensor)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::BatchNormalization,
        eager: Eager::Composite,
        dtypes: FLOAT,
        shape: BROADCAST,
        doc: "Inference batch norm: inv = rsqrt(variance + eps) * scale; x * inv + (offset - mean * inv).",
        tf: "tf.nn.batch_normalization",
        example: "let y = batch_normalization(x, mu, var, beta, gamma, 1e-3);",
    },
    OpRow {
        name: "layer_norm",
        family: Family::Nn,
        args: &[req("x", Kind::Tensor), req("gamma", Kind::Tensor), req("beta", Kind::Tensor), opt("axes", Kind::Axes), opt("epsilon", Kind::Scalar)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::LayerNorm,
        eager: Eager::Composite,
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
        args: &[req("x", Kind::Tensor), opt("message", Kind::Message)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Assert(AssertKind::NonNegative),
        eager: Eager::Custom("assert_non_negative"),
        dtypes: NUMBER,
        shape: "a statement: no value",
        doc: "Fails the call with `Error::Assertion` unless every element is >= 0.",
        tf: "tf.debugging.assert_non_negative",
        example: "assert_non_negative(x, \"x must be >= 0\");",
    },
    OpRow {
        name: "assert_greater",
        family: Family::Check,
        args: &[req("x", Kind::Tensor), req("y", Kind::Tensor), opt("message", Kind::Message)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Assert(AssertKind::Greater),
        eager: Eager::Custom("assert_greater"),
        dtypes: NUMBER,
        shape: "a statement: no value; x and y broadcast",
        doc: "Fails the call unless x > y everywhere.",
        tf: "tf.debugging.assert_greater",
        example: "assert_greater(x, 0.0, \"x must be positive\");",
    },
    OpRow {
        name: "assert_less",
        family: Family::Check,
        args: &[req("x", Kind::Tensor), req("y", Kind::Tensor), opt("message", Kind::Message)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Assert(AssertKind::Less),
        eager: Eager::Custom("assert_less"),
        dtypes: NUMBER,
        shape: "a statement: no value; x and y broadcast",
        doc: "Fails the call unless x < y everywhere.",
        tf: "tf.debugging.assert_less",
        example: "assert_less(x, 1.0, \"x must be below 1\");",
    },
    OpRow {
        name: "assert_all_finite",
        family: Family::Check,
        args: &[req("x", Kind::Tensor), opt("message", Kind::Message)],
        type_param: TypeParam::None,
        alias: None,
        lowering: Lowering::Assert(AssertKind::AllFinite),
        eager: Eager::Custom("assert_all_finite"),
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

/// The `grafo::eager` function of an IR node lowered one to one from a row whose twin takes
/// the operands alone (`Eager::Operands`); `None` for every other node.
pub fn eager_operands_fn(op: &Op) -> Option<&'static str> {
    let name = match op {
        Op::Unary(u) => u.name(),
        Op::Binary(b) => b.name(),
        Op::Select => "select",
        Op::BiasAdd => "bias_add",
        Op::Norm => "norm",
        _ => return None,
    };
    match lookup(name)?.eager {
        Eager::Operands(f) => Some(f),
        _ => None,
    }
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
                r.name,
                r.name,
                r.signature(),
                r.dtypes,
                r.shape,
                r.tf
            );
        }
        md.push('\n');
        for r in &rows {
            let eager = match r.eager {
                Eager::Operands(f) | Eager::Custom(f) => {
                    format!("Eager twin: `grafo::eager::{f}`.")
                }
                Eager::Literal => "Eager twin: a literal array.".to_string(),
                Eager::Composite => {
                    "Eager twin: none of its own; it is lowered into other ops, each run by its own eager function."
                        .to_string()
                }
            };
            let _ = writeln!(
                md,
                "### {}\n\n{}\n\n{eager}\n\n```rust\n{}\n```\n",
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

    /// `emit/eager.rs` renders these from their rows alone.
    #[test]
    fn operand_twins() {
        for op in [Op::Select, Op::BiasAdd, Op::Norm, Op::Unary(UnaryOp::Exp)] {
            assert!(eager_operands_fn(&op).is_some(), "{op:?}");
        }
        assert_eq!(eager_operands_fn(&Op::Unary(UnaryOp::Gelu)), None);
        assert_eq!(eager_operands_fn(&Op::Binary(BinaryOp::Add)), None);
    }

    /// Every row's lowering is of its family, and its arguments are in order (required,
    /// then optional), so the derived signature and counts read right.
    #[test]
    fn rows_are_consistent() {
        for r in OPS {
            let first_optional = r.args.iter().position(|a| a.need != Need::Required);
            if let Some(k) = first_optional {
                assert!(
                    r.args[k..].iter().all(|a| a.need != Need::Required),
                    "{}: a required argument after an optional one",
                    r.name
                );
                assert_ne!(r.args[k].need, Need::WithPrevious, "{}", r.name);
            }
            assert!(r.accepts(r.args.len()), "{}", r.name);
            let family_ok = match r.lowering {
                Lowering::Constant | Lowering::Zeros | Lowering::Ones | Lowering::Fill => {
                    r.family == Family::Create
                }
                Lowering::Selection(_) => r.family == Family::Selection,
                Lowering::Assert(_) => r.family == Family::Check,
                Lowering::Reduce(_) | Lowering::Norm => r.family == Family::Reduce,
                Lowering::MatMul | Lowering::Transpose | Lowering::Reshape => {
                    r.family == Family::Linalg
                }
                _ => matches!(r.family, Family::Elementwise | Family::Nn),
            };
            assert!(family_ok, "{}: {:?} in {:?}", r.name, r.lowering, r.family);
        }
    }

    #[test]
    fn derived_signatures_and_counts() {
        let row = |n| lookup(n).unwrap();
        assert_eq!(
            row("reduce_sum").signature(),
            "reduce_sum(x [, axis or [axes] [, keep_dims]])"
        );
        assert_eq!(row("cast").signature(), "cast::<T>(x)");
        assert_eq!(
            row("one_hot").signature(),
            "one_hot(indices, depth [, on, off]) / one_hot::<T>(indices, depth [, on, off])"
        );
        assert_eq!(row("truncatemod").signature(), "truncatemod(a, b) / a % b");
        let one_hot = row("one_hot");
        let counts: Vec<usize> = (0..6).filter(|&n| one_hot.accepts(n)).collect();
        assert_eq!(counts, [2, 4]);
        assert!(one_hot
            .arity_message(3)
            .starts_with("`one_hot` takes 2 or 4 arguments"));
        assert!(row("conv2d")
            .arity_message(3)
            .starts_with("`conv2d` takes 4 or 5 arguments"));
        assert!(row("exp")
            .arity_message(2)
            .starts_with("`exp` takes 1 argument,"));
        assert!(row("layer_norm")
            .arity_message(1)
            .starts_with("`layer_norm` takes 3 to 5 arguments"));
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
