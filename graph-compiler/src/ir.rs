//! The graph IR: nodes (ops over tensors) with dtype, shape and the span they came from, plus cond nodes and regions.

use proc_macro2::Span;
use quote::ToTokens;
use std::fmt;

/// The source range of an expression: its first and last token. Stable Rust cannot join
/// spans, so errors are rendered over both ends (as `syn::Error::new_spanned` does).
#[derive(Debug, Clone, Copy)]
pub struct SpanRange {
    pub start: Span,
    pub end: Span,
}

impl SpanRange {
    /// The range covered by a syntax node.
    pub fn of(tokens: &impl ToTokens) -> SpanRange {
        let mut iter = tokens.to_token_stream().into_iter();
        let start = iter.next().map_or_else(Span::call_site, |t| t.span());
        let end = iter.last().map_or(start, |t| t.span());
        SpanRange { start, end }
    }

    /// 1-based source line where the range starts.
    pub fn line(self) -> u32 {
        self.start.start().line as u32
    }
}

impl From<Span> for SpanRange {
    fn from(span: Span) -> SpanRange {
        SpanRange {
            start: span,
            end: span,
        }
    }
}

/// `.span()` on any syntax node as a [`SpanRange`] (lowering uses it instead of `syn::spanned::Spanned`).
pub trait Spanned {
    fn span(&self) -> SpanRange;
}

impl<T: Spanned> Spanned for &T {
    fn span(&self) -> SpanRange {
        (**self).span()
    }
}

impl<T: Spanned> Spanned for Box<T> {
    fn span(&self) -> SpanRange {
        (**self).span()
    }
}

/// An expression's ends are read from its syntax tree: printing it to tokens costs its whole
/// size, once per node of a deep expression (quadratic at 10,000 levels).
impl Spanned for syn::Expr {
    fn span(&self) -> SpanRange {
        SpanRange {
            start: expr_start(self),
            end: expr_end(self),
        }
    }
}

/// The expressions lowering recurses through, read from the tree as [`syn::Expr`] is.
macro_rules! spanned_by_tree {
    ($($t:ident: |$e:ident| $start:expr, $end:expr;)*) => {
        $(impl Spanned for syn::$t {
            fn span(&self) -> SpanRange {
                let $e = self;
                SpanRange { start: $start, end: $end }
            }
        })*
    };
}

spanned_by_tree!(
    ExprCall: |e| expr_start(&e.func), e.paren_token.span.close();
    ExprMethodCall: |e| expr_start(&e.receiver), e.paren_token.span.close();
    ExprBinary: |e| expr_start(&e.left), expr_end(&e.right);
    ExprUnary: |e| SpanRange::of(&e.op).start, expr_end(&e.expr);
    ExprParen: |e| e.paren_token.span.open(), e.paren_token.span.close();
    ExprIndex: |e| expr_start(&e.expr), e.bracket_token.span.close();
);

/// The other syntax nodes lowering points at: their tokens' ends.
macro_rules! spanned_by_tokens {
    ($($t:ty),* $(,)?) => {
        $(impl Spanned for $t {
            fn span(&self) -> SpanRange {
                SpanRange::of(self)
            }
        })*
    };
}

spanned_by_tokens!(
    syn::ExprIf,
    syn::ExprForLoop,
    syn::ExprLit,
    syn::ExprPath,
    syn::ExprMacro,
    syn::ExprAssign,
    syn::ExprBlock,
    syn::ExprTuple,
    syn::ExprArray,
    syn::ExprRange,
    syn::ExprCast,
    syn::ExprField,
    syn::ExprReference,
    syn::ExprClosure,
    syn::Block,
    syn::Stmt,
    syn::Local,
    syn::Pat,
    syn::PatIdent,
    syn::PatTuple,
    syn::StmtMacro,
    syn::TypePath,
    syn::PatType,
    syn::Type,
    syn::Lit,
    syn::LitInt,
    syn::LitFloat,
    syn::Ident,
    syn::Path,
    syn::Macro,
    syn::Item,
    syn::ItemFn,
    syn::Signature,
    syn::FnArg,
    syn::ReturnType,
    syn::Member,
    syn::BinOp,
    syn::UnOp,
    syn::RangeLimits,
    syn::GenericArgument,
    syn::PathSegment,
    proc_macro2::TokenStream,
);

/// The span of the first token of `e`.
fn expr_start(e: &syn::Expr) -> Span {
    match e {
        syn::Expr::Call(c) if c.attrs.is_empty() => expr_start(&c.func),
        syn::Expr::MethodCall(m) if m.attrs.is_empty() => expr_start(&m.receiver),
        syn::Expr::Binary(b) if b.attrs.is_empty() => expr_start(&b.left),
        syn::Expr::Index(i) if i.attrs.is_empty() => expr_start(&i.expr),
        syn::Expr::Field(f) if f.attrs.is_empty() => expr_start(&f.base),
        syn::Expr::Cast(c) if c.attrs.is_empty() => expr_start(&c.expr),
        syn::Expr::Paren(p) if p.attrs.is_empty() => p.paren_token.span.open(),
        syn::Expr::Unary(u) if u.attrs.is_empty() => SpanRange::of(&u.op).start,
        syn::Expr::Lit(l) if l.attrs.is_empty() => SpanRange::of(&l.lit).start,
        syn::Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => {
            match &p.path.leading_colon {
                Some(c) => c.spans[0],
                None => p
                    .path
                    .segments
                    .first()
                    .map_or_else(Span::call_site, |s| s.ident.span()),
            }
        }
        other => SpanRange::of(other).start,
    }
}

/// The span of the last token of `e`.
fn expr_end(e: &syn::Expr) -> Span {
    match e {
        syn::Expr::Call(c) => c.paren_token.span.close(),
        syn::Expr::MethodCall(m) => m.paren_token.span.close(),
        syn::Expr::Binary(b) => expr_end(&b.right),
        syn::Expr::Unary(u) => expr_end(&u.expr),
        syn::Expr::Index(i) => i.bracket_token.span.close(),
        syn::Expr::Paren(p) => p.paren_token.span.close(),
        syn::Expr::Lit(l) => SpanRange::of(&l.lit).end,
        syn::Expr::Path(p)
            if p.path
                .segments
                .last()
                .is_some_and(|s| s.arguments.is_none()) =>
        {
            p.path
                .segments
                .last()
                .map_or_else(Span::call_site, |s| s.ident.span())
        }
        other => SpanRange::of(other).end,
    }
}

/// Index of a node in [`Graph::nodes`]; prints as `n3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// Index of a cond node in [`Graph::conds`]; prints as `cond1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondId(pub usize);

impl fmt::Display for CondId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cond{}", self.0)
    }
}

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I32,
    I64,
    Bool,
}

impl DType {
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "f32" => DType::F32,
            "f64" => DType::F64,
            "i32" => DType::I32,
            "i64" => DType::I64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// The size of one element in bytes.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// The variant name in `grafo::DType`.
    pub fn variant(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::Bool => "Bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension: a known size, a named symbol bound at the call, or a product of symbols
/// and a constant (`B*4`, from `reshape(x, [B * 4, 64])`).
///
/// Dims are kept normalised (see [`Dim::from_monomial`]): a product always has a
/// coefficient other than 1 or at least two symbols, and its symbols are sorted, so two
/// dims are the same size exactly when they are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    Const(u64),
    Sym(String),
    Prod(Monomial),
}

impl Dim {
    /// The normalised dim of a monomial: a constant, one symbol, or a product.
    pub fn from_monomial(m: Monomial) -> Dim {
        if m.coef == 0 || m.syms.is_empty() {
            Dim::Const(m.coef)
        } else if m.coef == 1 && m.syms.len() == 1 {
            Dim::Sym(m.syms[0].clone())
        } else {
            Dim::Prod(m)
        }
    }

    /// This dim as a monomial (`B` is `1*B`, `4` is `4`).
    pub fn monomial(&self) -> Monomial {
        match self {
            Dim::Const(n) => Monomial {
                coef: *n,
                syms: vec![],
            },
            Dim::Sym(s) => Monomial {
                coef: 1,
                syms: vec![s.clone()],
            },
            Dim::Prod(m) => m.clone(),
        }
    }

    /// The product of two dims, normalised; `None` if the constant part overflows `u64`.
    pub fn times(&self, other: &Dim) -> Option<Dim> {
        self.monomial()
            .times(&other.monomial())
            .map(Dim::from_monomial)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Const(n) => write!(f, "{n}"),
            Dim::Sym(s) => f.write_str(s),
            Dim::Prod(m) => write!(f, "{m}"),
        }
    }
}

/// A shape: one [`Dim`] per axis; `[]` is a scalar.
pub type Shape = Vec<Dim>;

/// Formats a shape as `[B, 784]`.
pub fn shape_str(shape: &[Dim]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Formats a dtype and shape as `f32[B, 784]`.
pub fn type_str(dtype: DType, shape: &[Dim]) -> String {
    format!("{}{}", dtype, shape_str(shape))
}

/// A size as `product of symbols * coefficient` (symbols sorted, repeats kept), so that
/// `[B, 28, 28]` and `[B, 784]` are provably the same size; prints as `B*784`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Monomial {
    pub coef: u64,
    pub syms: Vec<String>,
}

impl Monomial {
    /// The element count of a shape; the coefficient saturates at `u64::MAX` on overflow
    /// (use [`Monomial::checked_of`] where an overflow must be reported).
    pub fn of(shape: &[Dim]) -> Monomial {
        Monomial::checked_of(shape).unwrap_or_else(|| {
            let mut syms: Vec<String> = shape.iter().flat_map(|d| d.monomial().syms).collect();
            syms.sort();
            Monomial {
                coef: u64::MAX,
                syms,
            }
        })
    }

    /// The element count of a shape, or `None` if its constant part overflows `u64`.
    pub fn checked_of(shape: &[Dim]) -> Option<Monomial> {
        let one = Monomial {
            coef: 1,
            syms: vec![],
        };
        shape
            .iter()
            .try_fold(one, |acc, d| acc.times(&d.monomial()))
    }

    /// The product of two monomials; `None` if the coefficient overflows `u64`.
    pub fn times(&self, other: &Monomial) -> Option<Monomial> {
        let coef = self.coef.checked_mul(other.coef)?;
        let mut syms = self.syms.clone();
        syms.extend(other.syms.iter().cloned());
        syms.sort();
        Some(Monomial { coef, syms })
    }

    /// `self / other` when it divides exactly (the coefficient divides and every symbol of
    /// `other` occurs in `self` as often), else `None`.
    pub fn divide(&self, other: &Monomial) -> Option<Monomial> {
        if other.coef == 0 || !self.coef.is_multiple_of(other.coef) {
            return None;
        }
        let mut rest = self.syms.clone();
        for s in &other.syms {
            let p = rest.iter().position(|r| r == s)?;
            rest.remove(p);
        }
        Some(Monomial {
            coef: self.coef / other.coef,
            syms: rest,
        })
    }
}

impl fmt::Display for Monomial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.syms.clone();
        if self.coef != 1 || self.syms.is_empty() {
            parts.push(self.coef.to_string());
        }
        f.write_str(&parts.join("*"))
    }
}

/// A scalar constant value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Float(f64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }

    /// The value converted to `dtype` (`as` semantics).
    pub fn convert(self, dtype: DType) -> Scalar {
        match dtype {
            // An integer is rounded to f32 once, as `i64 as f32` does (not through f64).
            DType::F32 => Scalar::Float(match self {
                Scalar::Int(v) => v as f32 as f64,
                other => other.as_f64() as f32 as f64,
            }),
            DType::F64 => Scalar::Float(self.as_f64()),
            DType::I32 => Scalar::Int(match self {
                Scalar::Int(v) => v as i32 as i64,
                other => other.as_f64() as i32 as i64,
            }),
            DType::I64 => Scalar::Int(match self {
                Scalar::Int(v) => v,
                other => other.as_f64() as i64,
            }),
            DType::Bool => Scalar::Bool(self.as_f64() != 0.0),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Float(v) => write!(f, "{v:?}"),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(v) => write!(f, "{v}"),
        }
    }
}

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
        }
    }

    /// Whether the op needs a float operand (transcendentals) rather than any number.
    pub fn needs_float(self) -> bool {
        self.operand_kind() == OperandKind::Float
    }

    /// The dtypes the op accepts.
    pub fn operand_kind(self) -> OperandKind {
        match self {
            UnaryOp::Abs | UnaryOp::Square | UnaryOp::Relu | UnaryOp::Neg => OperandKind::Number,
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
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "reduce_sum",
            ReduceKind::Mean => "reduce_mean",
            ReduceKind::Max => "reduce_max",
            ReduceKind::Min => "reduce_min",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Padding {
    Same,
    Valid,
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
}

impl SelOp {
    pub fn name(&self) -> &'static str {
        match self {
            SelOp::Slice { name, .. } | SelOp::Concat { name, .. } => name,
            SelOp::Tile { .. } => "tile",
            SelOp::Pad { .. } => "pad",
            SelOp::Gather { .. } => "gather",
            SelOp::OneHot { .. } => "one_hot",
            SelOp::ArgReduce { min: false, .. } => "argmax",
            SelOp::ArgReduce { min: true, .. } => "argmin",
            SelOp::Range { .. } => "range",
            SelOp::Values { .. } => "constant",
        }
    }
}

/// Where a node lives: the main graph or one arm of a cond (arms nest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    Main,
    Arm { cond: CondId, then_arm: bool },
}

impl Region {
    /// The then and else arms of `cond`.
    pub fn arms(cond: CondId) -> (Region, Region) {
        let arm = |then_arm| Region::Arm { cond, then_arm };
        (arm(true), arm(false))
    }
}

/// One node of the graph.
#[derive(Debug, Clone)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<NodeId>,
    pub dtype: DType,
    pub shape: Shape,
    /// The expression this node came from.
    pub span: SpanRange,
    /// 1-based source line of `span`.
    pub line: u32,
    /// The `let` name bound to this node, if any.
    pub name: Option<String>,
    pub region: Region,
    /// Set when the node could not be typed; checks on its users are skipped (no cascade).
    pub poisoned: bool,
}

/// The condition of a cond: a rank-0 bool tensor node, or a host Rust expression.
#[derive(Debug, Clone)]
pub enum Predicate {
    Tensor(NodeId),
    Host(proc_macro2::TokenStream),
}

/// A cond node: both arms are subgraphs (regions); only the taken one runs.
#[derive(Debug, Clone)]
pub struct Cond {
    pub predicate: Predicate,
    /// The region the cond itself lives in.
    pub region: Region,
    /// The variable names it outputs (AutoGraph's rule), in order.
    pub names: Vec<String>,
    pub then_outputs: Vec<NodeId>,
    pub else_outputs: Vec<NodeId>,
    /// The `CondOut` nodes, one per output.
    pub results: Vec<NodeId>,
    /// Effect nodes (asserts) inside each arm, which must run when that arm runs.
    pub then_effects: Vec<NodeId>,
    pub else_effects: Vec<NodeId>,
    /// Set when an optimisation removed the cond (its results forward an arm's values).
    pub removed: bool,
}

/// A tensor parameter of the function.
#[derive(Debug, Clone)]
pub struct TensorParam {
    pub name: syn::Ident,
    pub dtype: DType,
    pub shape: Shape,
    pub span: Span,
    /// Declared `mut x: ...`: reassignable in the body like a `let mut`.
    pub mutable: bool,
}

/// A host parameter (plain Rust value).
#[derive(Debug, Clone)]
pub struct HostParam {
    pub name: syn::Ident,
    pub ty: syn::Type,
    /// The scalar dtype it acts as when used as an operand.
    pub dtype: DType,
    /// Declared `mut n: ...`: reassignable in the body like a `let mut`.
    pub mutable: bool,
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Param {
    Tensor(TensorParam),
    Host(HostParam),
}

impl Param {
    pub fn name(&self) -> &syn::Ident {
        match self {
            Param::Tensor(t) => &t.name,
            Param::Host(h) => &h.name,
        }
    }
}

/// The declared result: one tensor or a tuple of them.
#[derive(Debug, Clone)]
pub struct OutputDecl {
    pub dtype: DType,
    pub shape: Shape,
}

/// The whole graph of one `#[graph]` function.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub conds: Vec<Cond>,
    /// Values returned, in order.
    pub outputs: Vec<NodeId>,
    /// Effect nodes (asserts) of the main region, in program order.
    pub effects: Vec<NodeId>,
    /// The host parameters' identifiers as written, for emitting a host read (`Op::Host`
    /// keeps only the text) with the parameter's own span and hygiene.
    pub host_idents: Vec<proc_macro2::Ident>,
}

impl Graph {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.0]
    }

    pub fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId(self.nodes.len() - 1)
    }

    /// Whether region `r` is an arm of `cond` or lies inside one (arms nest).
    pub fn within_cond(&self, mut r: Region, cond: CondId) -> bool {
        loop {
            match r {
                Region::Main => return false,
                Region::Arm { cond: c, .. } if c == cond => return true,
                Region::Arm { cond: c, .. } => r = self.conds[c.0].region,
            }
        }
    }

    /// Whether an arm of `cond`, or of a cond nested in it, runs a check (an `assert_*`):
    /// such a cond must run even when none of its results is used.
    pub fn cond_checks(&self, cond: CondId) -> bool {
        self.conds.iter().enumerate().any(|(i, c)| {
            let checks = !c.then_effects.is_empty() || !c.else_effects.is_empty();
            !c.removed && checks && (i == cond.0 || self.within_cond(c.region, cond))
        })
    }

    /// Where a cond runs in program order: at its first result or, for a cond without results
    /// (one that only checks, `if c { assert_non_negative(x); }`), right after its arms' last node.
    pub fn cond_position(&self, cond: CondId) -> usize {
        if let Some(first) = self.conds[cond.0].results.first() {
            return first.0;
        }
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| self.within_cond(n.region, cond))
            .map(|(i, _)| i + 1)
            .max()
            .unwrap_or(0)
    }

    /// The scalar value of a constant node.
    pub fn const_value(&self, id: NodeId) -> Option<Scalar> {
        match self.node(id).op {
            Op::Const { value, .. } => Some(value),
            _ => None,
        }
    }
}
