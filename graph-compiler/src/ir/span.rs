//! Source ranges: the first and last token of an expression, so errors underline it whole.

use proc_macro2::Span;
use quote::ToTokens;

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
