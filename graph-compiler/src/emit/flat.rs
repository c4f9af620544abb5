//! Flattens the scopes of the emitted code: the `let`s of a block are declared once at its top and assigned where they stood, so a program of 10,000 ops is one scope deep and not 10,000.
//!
//! Every `let` opens a scope that lasts to the end of its block, nested in the scope of the
//! `let` before it. rustc turns each scope that binds a variable into a lexical block of the
//! debug info, and LLVM walks those blocks recursively (`DwarfCompileUnit`), so a debug build
//! of a body with a few thousand `let`s overflows rustc's stack. Declaring the block's
//! locals in one `let (a, b, ..);` at its top and turning each `let a = e;` into `a = e;`
//! leaves one scope with all the variables, whatever the length of the program; the values,
//! the order of evaluation and the machine code of a release build are the same.
//!
//! A `let` is only rewritten when that cannot change what any name refers to or how long a
//! value lives: its names are not mentioned earlier in the block (no shadowing, no outer
//! name read before it) nor in its own initialiser, its pattern is a name or a tuple of
//! names, and its initialiser borrows no temporary whose life a `let` would extend.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::HashSet;
use syn::visit_mut::VisitMut;

/// The items of one expansion with every block's `let`s hoisted into one declaration. Code
/// that does not parse as items is returned unchanged.
pub fn flatten_scopes(items: TokenStream) -> TokenStream {
    let Ok(mut file) = syn::parse2::<syn::File>(items.clone()) else {
        return items;
    };
    Flattener.visit_file_mut(&mut file);
    file.into_token_stream()
}

struct Flattener;

impl VisitMut for Flattener {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, block);
        flatten_block(block);
    }

    /// The body of a `multiversion!` kernel is a function in a macro's tokens.
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        let is_kernel = mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "multiversion");
        if !is_kernel {
            return;
        }
        if let Ok(mut kernel) = syn::parse2::<syn::ItemFn>(mac.tokens.clone()) {
            self.visit_item_fn_mut(&mut kernel);
            mac.tokens = kernel.into_token_stream();
        }
    }
}

/// One local a hoisted `let` binds.
struct Binding {
    name: syn::Ident,
    mutable: bool,
    ty: Option<syn::Type>,
}

/// Rewrites the hoistable `let`s of one block (not its inner blocks) and puts their
/// declaration first.
fn flatten_block(block: &mut syn::Block) {
    let mut mentioned: HashSet<String> = HashSet::new();
    let mut hoisted: Vec<Binding> = Vec::new();
    for stmt in &mut block.stmts {
        let rewritten = match stmt {
            syn::Stmt::Local(local) => hoist(local, &mentioned),
            _ => None,
        };
        collect_idents(stmt.to_token_stream(), &mut mentioned);
        if let Some((bindings, assignment)) = rewritten {
            hoisted.extend(bindings);
            *stmt = assignment;
        }
    }
    if hoisted.is_empty() {
        return;
    }
    let names = hoisted.iter().map(|b| {
        let name = &b.name;
        if b.mutable {
            quote::quote!(mut #name)
        } else {
            quote::quote!(#name)
        }
    });
    let tys = hoisted.iter().map(|b| match &b.ty {
        Some(ty) => ty.to_token_stream(),
        None => quote::quote!(_),
    });
    let declaration: syn::Stmt = syn::parse_quote!(let (#(#names,)*): (#(#tys,)*););
    block.stmts.insert(0, declaration);
}

/// The bindings of `local` and the assignment that replaces it, when it may be hoisted.
fn hoist(local: &syn::Local, mentioned: &HashSet<String>) -> Option<(Vec<Binding>, syn::Stmt)> {
    if !local.attrs.is_empty() {
        return None;
    }
    let init = local.init.as_ref()?;
    if init.diverge.is_some() || extends_temporaries(&init.expr) {
        return None;
    }
    let (pat, ty) = match &local.pat {
        syn::Pat::Type(t) => (&*t.pat, Some((*t.ty).clone())),
        other => (other, None),
    };
    let mut bindings = Vec::new();
    let target = match pat {
        syn::Pat::Ident(p) => {
            bindings.push(simple_binding(p, ty)?);
            let name = &p.ident;
            quote::quote!(#name)
        }
        syn::Pat::Tuple(t) if ty.is_none() => {
            let mut targets = Vec::new();
            for elem in &t.elems {
                match elem {
                    syn::Pat::Ident(p) => {
                        bindings.push(simple_binding(p, None)?);
                        let name = &p.ident;
                        targets.push(quote::quote!(#name));
                    }
                    syn::Pat::Wild(_) => targets.push(quote::quote!(_)),
                    _ => return None,
                }
            }
            quote::quote!((#(#targets,)*))
        }
        _ => return None,
    };
    if bindings.is_empty() {
        return None;
    }
    let mut in_init = HashSet::new();
    collect_idents(init.expr.to_token_stream(), &mut in_init);
    let mut names = HashSet::new();
    for b in &bindings {
        let name = b.name.to_string();
        if mentioned.contains(&name) || in_init.contains(&name) || !names.insert(name) {
            return None;
        }
    }
    let expr = &init.expr;
    let assignment: syn::Stmt = syn::parse_quote!(#target = #expr;);
    Some((bindings, assignment))
}

/// A plain `name` or `mut name` binding (no `ref`, no `@` pattern).
fn simple_binding(p: &syn::PatIdent, ty: Option<syn::Type>) -> Option<Binding> {
    if p.by_ref.is_some() || p.subpat.is_some() || !p.attrs.is_empty() {
        return None;
    }
    Some(Binding {
        name: p.ident.clone(),
        mutable: p.mutability.is_some(),
        ty,
    })
}

/// Whether a `let` with this initialiser would extend the life of a temporary it borrows
/// (`let x = &f();`, also through tuples, arrays, structs, casts and block tails), which an
/// assignment would not.
fn extends_temporaries(e: &syn::Expr) -> bool {
    use syn::Expr;
    match e {
        Expr::Reference(_) | Expr::RawAddr(_) => true,
        Expr::Paren(p) => extends_temporaries(&p.expr),
        Expr::Group(g) => extends_temporaries(&g.expr),
        Expr::Cast(c) => extends_temporaries(&c.expr),
        Expr::Tuple(t) => t.elems.iter().any(extends_temporaries),
        Expr::Array(a) => a.elems.iter().any(extends_temporaries),
        Expr::Struct(s) => s.fields.iter().any(|f| extends_temporaries(&f.expr)),
        Expr::Block(b) => block_tail_extends(&b.block),
        Expr::Unsafe(u) => block_tail_extends(&u.block),
        Expr::If(i) => {
            block_tail_extends(&i.then_branch)
                || i.else_branch
                    .as_ref()
                    .is_some_and(|(_, e)| extends_temporaries(e))
        }
        Expr::Match(m) => m.arms.iter().any(|a| extends_temporaries(&a.body)),
        _ => false,
    }
}

fn block_tail_extends(b: &syn::Block) -> bool {
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => extends_temporaries(e),
        _ => false,
    }
}

/// Adds the text of every identifier in `tokens` (inner groups too) to `out`.
fn collect_idents(tokens: TokenStream, out: &mut HashSet<String>) {
    for tt in tokens {
        match tt {
            TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            TokenTree::Group(g) => collect_idents(g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::flatten_scopes;

    fn flat(src: &str) -> String {
        let tokens: proc_macro2::TokenStream = src.parse().unwrap();
        let file: syn::File = syn::parse2(flatten_scopes(tokens)).unwrap();
        prettyplease::unparse(&file)
    }

    #[test]
    fn lets_become_one_declaration_and_assignments() {
        let out = flat(
            "fn f(x: f32) -> f32 { let a: f32 = x + 1.0; let mut b = a * 2.0; b += 1.0; let (c, _, d) = (b, 0, a); c + d }",
        );
        assert_eq!(
            out,
            "fn f(x: f32) -> f32 {\n    let (a, mut b, c, d): (f32, _, _, _);\n    a = x + 1.0;\n    b = a * 2.0;\n    b += 1.0;\n    (c, _, d) = (b, 0, a);\n    c + d\n}\n"
        );
    }

    #[test]
    fn shadowing_outer_names_and_extended_temporaries_stay_lets() {
        // `x` shadows the parameter and reads it; the second `a` shadows the first; `r`
        // borrows a temporary that only a `let` keeps alive. The first `a` is hoisted: its
        // assignment stays after `let x`, so it reads the same `x`.
        let out = flat(
            "fn f(x: &[f32]) -> f32 { let x = &x[1..]; let a = x[0]; let a = a + 1.0; let r = &g(); a + *r }",
        );
        assert_eq!(
            out,
            "fn f(x: &[f32]) -> f32 {\n    let (a,): (_,);\n    let x = &x[1..];\n    a = x[0];\n    let a = a + 1.0;\n    let r = &g();\n    a + *r\n}\n"
        );
    }

    #[test]
    fn inner_blocks_and_kernels_are_flattened() {
        let out = flat(
            "fn f() { let a = 1; if c { let b = a; h(b) } m::multiversion! { fn k(n: usize) { for j in 0..n { let t: f32 = j as f32; let u: f32 = t * 2.0; o(u); } } } }",
        );
        assert!(out.contains("let (b,): (_,);\n        b = a;"), "{out}");
        assert!(
            out.contains("let (t, u,) : (f32, f32,); t = j as f32;"),
            "{out}"
        );
        assert!(out.contains("let (a,): (_,);\n    a = 1;"), "{out}");
    }
}
