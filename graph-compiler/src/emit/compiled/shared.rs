//! Emits each distinct fused kernel once per function: kernels that differ only in their name and the names of their locals (an unrolled loop's steps, a function inlined at several calls) become one item of the body, which every step calls.
//!
//! A kernel is a `multiversion!` item: a function with concrete types that captures nothing
//! (an item cannot), so where it stands in the body does not change what it computes, and
//! two kernels whose tokens are the same up to their names compute the same thing for the
//! same arguments. Its locals named after node ids (`__t41`, `__dv7`, `__s12`...) are renamed
//! in the order they first appear, the kernel's own name replaced by a placeholder, and the
//! result is the kernel's key: the first kernel of each key is kept, moved to the end of the
//! function body (an item there is visible in every nested block: a cond arm, a closure), and
//! every call of a later one calls it instead. Each kept kernel is compiled once per
//! instruction set, rather than once per step for each: a 16-step GRU had 64 copies of its 4
//! kernels, each compiled three times.

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use std::collections::HashMap;

/// Prefixes of the kernel locals named after a node id or a position, which are renamed.
const LOCAL_PREFIXES: [&str; 9] = [
    "__t", "__dv", "__k", "__lanes_", "__s", "__y", "__o", "__c", "__r",
];

/// The body with every `::grafo::__private::multiversion! { .. }` item taken out, calls of a
/// duplicate renamed to the kernel kept; and the distinct kernels, to be put in the
/// function's outermost block after the body's statements (an item there is visible before
/// it too; placed first, its locals' names would keep `flat.rs` from hoisting the body's).
pub fn share_kernels(body: TokenStream) -> (TokenStream, TokenStream) {
    let mut kernels: Vec<TokenStream> = Vec::new();
    let mut keys: HashMap<String, Ident> = HashMap::new();
    let mut renames: HashMap<String, Ident> = HashMap::new();
    let rest = take_kernels(body, &mut |item| {
        let Some((name, key)) = kernel_key(&item.1) else {
            kernels.push(item.0);
            return;
        };
        match keys.get(&key) {
            Some(kept) => {
                renames.insert(name.to_string(), kept.clone());
            }
            None => {
                keys.insert(key, name);
                kernels.push(item.0);
            }
        }
    });
    (kernels.into_iter().collect(), rename(rest, &renames))
}

/// `stream` without its kernel items, each passed to `found` as (the item's tokens, the
/// macro's body).
fn take_kernels(
    stream: TokenStream,
    found: &mut impl FnMut((TokenStream, TokenStream)),
) -> TokenStream {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(len) = kernel_at(&tokens[i..]) {
            let item: TokenStream = tokens[i..i + len].iter().cloned().collect();
            let TokenTree::Group(g) = &tokens[i + len - 1] else {
                unreachable!("kernel_at ends on the body")
            };
            found((item, g.stream()));
            i += len;
            continue;
        }
        match &tokens[i] {
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), take_kernels(g.stream(), found));
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
            }
            t => out.extend([t.clone()]),
        }
        i += 1;
    }
    out
}

/// The length of the kernel item `::grafo::__private::multiversion! { .. }` starting at
/// `t[0]`, if one does.
fn kernel_at(t: &[TokenTree]) -> Option<usize> {
    const PATH: [&str; 3] = ["grafo", "__private", "multiversion"];
    let colons = |a: &TokenTree, b: &TokenTree| matches!((a, b), (TokenTree::Punct(p), TokenTree::Punct(q)) if p.as_char() == ':' && q.as_char() == ':');
    if t.len() < 11 {
        return None;
    }
    for (k, name) in PATH.iter().enumerate() {
        let at = 3 * k;
        if !colons(&t[at], &t[at + 1]) {
            return None;
        }
        if !matches!(&t[at + 2], TokenTree::Ident(id) if id == name) {
            return None;
        }
    }
    let bang = matches!(&t[9], TokenTree::Punct(p) if p.as_char() == '!');
    let body = matches!(&t[10], TokenTree::Group(g) if g.delimiter() == Delimiter::Brace);
    (bang && body).then_some(11)
}

/// The kernel's name and its key: its tokens as text with the name replaced and its
/// locals renamed in the order they appear.
fn kernel_key(body: &TokenStream) -> Option<(Ident, String)> {
    let mut it = body.clone().into_iter();
    let name = loop {
        match it.next()? {
            TokenTree::Ident(id) if id == "fn" => match it.next()? {
                TokenTree::Ident(name) => break name,
                _ => return None,
            },
            TokenTree::Group(_) => return None,
            _ => {}
        }
    };
    let mut numbering: HashMap<String, String> = HashMap::new();
    let mut key = String::new();
    write_key(body, &name, &mut numbering, &mut key);
    Some((name, key))
}

fn write_key(
    stream: &TokenStream,
    name: &Ident,
    numbering: &mut HashMap<String, String>,
    key: &mut String,
) {
    for t in stream.clone() {
        match t {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("\u{1}", "\u{2}"),
                };
                key.push_str(open);
                write_key(&g.stream(), name, numbering, key);
                key.push_str(close);
            }
            TokenTree::Ident(id) => {
                let s = id.to_string();
                if id == *name {
                    key.push_str("__KERNEL");
                } else if let Some(prefix) = local_prefix(&s) {
                    let next = numbering.len();
                    let canon = numbering
                        .entry(s)
                        .or_insert_with(|| format!("{prefix}#{next}"));
                    key.push_str(canon);
                } else {
                    key.push_str(&s);
                }
            }
            TokenTree::Punct(p) => key.push(p.as_char()),
            TokenTree::Literal(l) => key.push_str(&l.to_string()),
        }
        key.push(' ');
    }
}

/// The prefix of a local named `{prefix}{digits}`.
fn local_prefix(s: &str) -> Option<&'static str> {
    LOCAL_PREFIXES.iter().copied().find(|p| {
        s.strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// `stream` with every identifier in `renames` replaced (keeping its span).
fn rename(stream: TokenStream, renames: &HashMap<String, Ident>) -> TokenStream {
    if renames.is_empty() {
        return stream;
    }
    stream
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(id) => match renames.get(&id.to_string()) {
                Some(kept) => TokenTree::Ident(Ident::new(&kept.to_string(), id.span())),
                None => TokenTree::Ident(id),
            },
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), rename(g.stream(), renames));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            t => t,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn duplicates_are_called_as_the_first() {
        let body = quote! {
            let a = 1;
            ::grafo::__private::multiversion! { fn __grafo_kernel_g2(__out: &mut [f32], __l0: &[f32]) { let __t5: f32 = __l0[0]; let __t6: f32 = __t5 + 1f32; __out[0] = __t6; } }
            run(|b| __grafo_kernel_g2(b, x));
            if c {
                ::grafo::__private::multiversion! { fn __grafo_kernel_g9(__out: &mut [f32], __l0: &[f32]) { let __t40: f32 = __l0[0]; let __t41: f32 = __t40 + 1f32; __out[0] = __t41; } }
                run(|b| __grafo_kernel_g9(b, y));
                ::grafo::__private::multiversion! { fn __grafo_kernel_g10(__out: &mut [f32], __l0: &[f32]) { let __t42: f32 = __l0[0]; let __t43: f32 = __t42 * 2f32; __out[0] = __t43; } }
                run(|b| __grafo_kernel_g10(b, y));
            }
        };
        let (kernels, rest) = share_kernels(body);
        let (kernels, out) = (kernels.to_string(), rest.to_string());
        assert_eq!(kernels.matches("multiversion").count(), 2, "{kernels}");
        assert!(
            kernels.starts_with(":: grafo :: __private :: multiversion ! { fn __grafo_kernel_g2"),
            "{kernels}"
        );
        assert!(kernels.contains("fn __grafo_kernel_g10"), "{kernels}");
        assert!(!out.contains("multiversion"), "{out}");
        assert!(
            out.contains("run (| b | __grafo_kernel_g2 (b , y))"),
            "{out}"
        );
        assert!(
            out.contains("run (| b | __grafo_kernel_g10 (b , y))"),
            "{out}"
        );
        assert!(
            !out.contains("__grafo_kernel_g9") && !kernels.contains("__grafo_kernel_g9"),
            "{out}"
        );
    }

    #[test]
    fn a_different_local_order_is_a_different_kernel() {
        // `__t1 - __t2` against `__t2 - __t1`: renamed by first appearance, the keys differ.
        let a = quote!(
            fn k1(x: f32) -> f32 {
                let __t1: f32 = x;
                let __t2: f32 = 2f32 * x;
                __t1 - __t2
            }
        );
        let b = quote!(
            fn k2(x: f32) -> f32 {
                let __t1: f32 = x;
                let __t2: f32 = 2f32 * x;
                __t2 - __t1
            }
        );
        assert_ne!(kernel_key(&a).unwrap().1, kernel_key(&b).unwrap().1);
        let c = quote!(
            fn k3(x: f32) -> f32 {
                let __t7: f32 = x;
                let __t9: f32 = 2f32 * x;
                __t7 - __t9
            }
        );
        assert_eq!(kernel_key(&a).unwrap().1, kernel_key(&c).unwrap().1);
    }
}
