//! Arguments given as literals: int lists (axes), dim lists and dim products (shapes), padding.

use super::expr::unwrapped;
use super::Lowerer;
use crate::ir::*;
use quote::ToTokens;
use syn::{Expr, Lit};

impl Lowerer<'_> {
    /// An axis or a list of axes: `1`, `-1`, `[0, 2]`.
    pub(super) fn int_list(&mut self, e: &Expr) -> Option<Vec<i64>> {
        if let Some(v) = self.literal_int(e) {
            return Some(vec![v]);
        }
        if let Expr::Array(a) = unwrapped(e) {
            let mut out = Vec::new();
            for el in &a.elems {
                match self.literal_int(el) {
                    Some(v) => out.push(v),
                    None => {
                        let msg = self.int_expected(
                            el,
                            "this element",
                            "an axis must be an integer literal",
                        );
                        self.diag.error(el.span(), msg);
                        return None;
                    }
                }
            }
            return Some(out);
        }
        self.diag.error(
            e.span(),
            "expected an integer literal axis or a list of them (`[0, 1]`)",
        );
        None
    }

    /// A shape list `[B, 784]`; `-1` (as `None`) only where `allow_infer`.
    pub(super) fn dim_list(&mut self, e: &Expr, allow_infer: bool) -> Option<Vec<Option<Dim>>> {
        let Expr::Array(a) = unwrapped(e) else {
            self.diag
                .error(e.span(), "expected a shape list such as `[B, 784]`");
            return None;
        };
        let mut out = Vec::new();
        for el in &a.elems {
            if let Some(v) = self.literal_int(el) {
                if v == -1 && allow_infer {
                    out.push(None);
                } else if v >= 0 {
                    out.push(Some(Dim::Const(v as u64)));
                } else {
                    self.diag.error(
                        el.span(),
                        "a dim must be non-negative (or -1 in `reshape`, to infer it)",
                    );
                    return None;
                }
                continue;
            }
            match self.dim_product(el) {
                Ok(d) => out.push(Some(d)),
                Err(()) => return None,
            }
        }
        Some(out)
    }
}

/// `SAME` or `VALID` (or TF's strings `"SAME"` / `"VALID"`).
pub(super) fn padding_of(e: &Expr) -> Option<Padding> {
    match unwrapped(e) {
        Expr::Path(p) if p.path.is_ident("SAME") => Some(Padding::Same),
        Expr::Path(p) if p.path.is_ident("VALID") => Some(Padding::Valid),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => match s.value().as_str() {
            "SAME" => Some(Padding::Same),
            "VALID" => Some(Padding::Valid),
            _ => None,
        },
        _ => None,
    }
}

/// `resize`'s method: `NEAREST` or `BILINEAR` (or the same as a string, as padding modes).
pub(super) fn resize_method_of(e: &Expr) -> Option<ResizeMethod> {
    let name = match unwrapped(e) {
        Expr::Path(p) => p.path.get_ident()?.to_string(),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => s.value(),
        _ => return None,
    };
    match name.as_str() {
        "NEAREST" => Some(ResizeMethod::Nearest),
        "BILINEAR" => Some(ResizeMethod::Bilinear),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// One dim of a shape list other than a plain literal: a symbol of the signature (`B`),
    /// or a product of symbols and non-negative literals (`B * 4`, `(B * H) * 64`).
    /// Reports the error itself.
    fn dim_product(&mut self, e: &Expr) -> Result<Dim, ()> {
        match e {
            Expr::Paren(p) => self.dim_product(&p.expr),
            Expr::Group(g) => self.dim_product(&g.expr),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
                let l = self.dim_product(&b.left)?;
                let r = self.dim_product(&b.right)?;
                match l.times(&r) {
                    Some(d) => Ok(d),
                    None => {
                        self.diag.error(
                            e.span(),
                            format!(
                                "the dim `{}` is larger than 64 bits can hold",
                                e.to_token_stream()
                            ),
                        );
                        Err(())
                    }
                }
            }
            Expr::Path(p)
                if p.path
                    .get_ident()
                    .is_some_and(|i| self.symbols.contains(&i.to_string())) =>
            {
                Ok(self.subst_dim(&Dim::Sym(
                    p.path
                        .get_ident()
                        .map(|i| i.to_string())
                        .unwrap_or_default(),
                )))
            }
            other => {
                if let Some(v) = self.literal_int(other) {
                    if v >= 0 {
                        return Ok(Dim::Const(v as u64));
                    }
                    self.diag.error(
                        other.span(),
                        "a factor of a dim must be non-negative (`-1` stands alone, to infer a dim of `reshape`)",
                    );
                    return Err(());
                }
                let found = other.to_token_stream().to_string();
                let msg = self.int_expected(other, "this dim", format!("a dim is an integer literal, a symbol of the signature (`B`) or a product of them (`B * 4`); `{found}` is none of these"));
                self.diag.error(other.span(), msg);
                Err(())
            }
        }
    }
}
