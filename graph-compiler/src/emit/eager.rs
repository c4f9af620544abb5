//! Emits `NAME::eager`: the unoptimised graph run op by op through `grafo::eager`, each op allocating its result, `if` as a plain Rust `if`.

use super::{elem_ty, padding_tokens, shape_expr};
use crate::emit::compiled::literal;
use crate::emit::{format_ident, quote};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream, TokenTree};
use std::collections::HashSet;

mod outline;
mod selection;

fn e(id: NodeId) -> Ident {
    format_ident!("e{}", id.0)
}

/// The most statements of a region emitted in one function body: a longer region is split
/// into closures of this many, each called once and returning the values later statements
/// read. Every value of the body is a local of the frame it is computed in, so one function
/// for a 5,000-op program has a frame of megabytes (more than a thread's 2 MiB in a debug
/// build) and keeps every intermediate array alive to its end; a chunk's frame and its
/// arrays are gone when it returns.
const CHUNK_STATEMENTS: usize = 128;

/// The statements of the eager body; the results are bound to `__results`, then the
/// in-place parameters' new values are written into the caller's arrays (nothing after can
/// fail, so an `Err` leaves every parameter untouched).
pub fn body(graph: &Graph, params: &[Param]) -> TokenStream {
    let new_values: Vec<NodeId> = graph.writebacks.iter().map(|&(_, w)| w).collect();
    let live_after: Vec<NodeId> = graph.outputs.iter().chain(&new_values).copied().collect();
    let mut main = region(graph, params, Region::Main);
    let mut out = outline::outline(graph, params, &mut main);
    out.extend(render(graph, params, main, &live_after));
    let mut results = Vec::new();
    for (k, &o) in graph.outputs.iter().enumerate() {
        let rank = graph.node(o).shape.len();
        let et = elem_ty(graph.node(o).dtype);
        let dt = super::dim_ty(rank);
        let id = e(o);
        let again = graph.outputs[k + 1..].contains(&o) || new_values.contains(&o);
        let val = if again {
            quote!(#id.to_owned())
        } else {
            quote!(#id.into_owned())
        };
        results.push(quote!(::grafo::__private::compiled::into_rank::<#et, #dt>(#val)?));
    }
    out.extend(quote!(let __results = (#(#results,)*);));
    out.extend(writebacks(graph, params));
    out
}

/// Writes each in-place parameter's new value into the caller's array; a value that is a
/// parameter updated in place (`w = m; m = w`) is copied before the first write.
fn writebacks(graph: &Graph, params: &[Param]) -> TokenStream {
    let mut copies = TokenStream::new();
    let mut writes = TokenStream::new();
    for (k, &(p, w)) in graph.writebacks.iter().enumerate() {
        let Param::Tensor(t) = &params[p] else {
            continue;
        };
        if graph.node(w).op == (Op::Input { param: p }) {
            continue;
        }
        let reads_in_place = match graph.node(w).op {
            Op::Input { param } => matches!(&params[param], Param::Tensor(q) if q.in_place),
            _ => false,
        };
        let value = e(w);
        let source = if reads_in_place {
            let local = format_ident!("__new_value_{}", k);
            copies.extend(quote!(let #local = #value.to_owned();));
            local
        } else {
            value
        };
        let name = &t.name;
        writes.extend(
            quote!(::grafo::__private::compiled::write_param_eager(&mut #name, &#source.view());),
        );
    }
    quote!(#copies #writes)
}

/// One statement of a region before it is rendered: its code and the values it binds.
struct Statement {
    code: Code,
    binds: Vec<NodeId>,
}

/// The code of a [`Statement`].
enum Code {
    /// Final tokens; `node` is the node they compute (`None` for a call of an outlined
    /// function, which [`outline`] made).
    Plain {
        tokens: TokenStream,
        node: Option<NodeId>,
    },
    /// A cond, its arms' statements not yet rendered (so that [`outline`] sees them).
    Cond {
        cond: CondId,
        then_arm: Vec<Statement>,
        else_arm: Vec<Statement>,
    },
}

/// A rendered statement: its tokens and the values it binds.
struct Rendered {
    code: TokenStream,
    binds: Vec<NodeId>,
}

/// The statements of region `r` in program order, its conds' arms included.
fn region(graph: &Graph, params: &[Param], r: Region) -> Vec<Statement> {
    let mut out: Vec<Statement> = Vec::new();
    let mut done_conds = Vec::new();
    // Conds without results (they only check) have no `CondOut` node to start them.
    let mut checks_only: Vec<(usize, CondId)> = (0..graph.conds.len())
        .map(CondId)
        .filter(|&c| {
            let cond = &graph.conds[c.0];
            cond.region == r && cond.results.is_empty() && graph.cond_checks(c)
        })
        .map(|c| (graph.cond_position(c), c))
        .collect();
    checks_only.sort();
    let mut checks_only = checks_only.into_iter().peekable();
    for (i, n) in graph.nodes.iter().enumerate() {
        while let Some((_, c)) = checks_only.next_if(|&(at, _)| at <= i) {
            out.push(cond_statement(graph, params, c));
        }
        if n.region != r || n.poisoned {
            continue;
        }
        let id = NodeId(i);
        if let Op::CondOut { cond, .. } = n.op {
            if !done_conds.contains(&cond) {
                done_conds.push(cond);
                out.push(cond_statement(graph, params, cond));
            }
            continue;
        }
        let binds = match n.op {
            Op::Assert { .. } => Vec::new(),
            _ => vec![id],
        };
        out.push(Statement {
            code: Code::Plain {
                tokens: node_code(graph, params, id),
                node: Some(id),
            },
            binds,
        });
    }
    for (_, c) in checks_only {
        out.push(cond_statement(graph, params, c));
    }
    out
}

fn cond_statement(graph: &Graph, params: &[Param], c: CondId) -> Statement {
    let (then_r, else_r) = Region::arms(c);
    Statement {
        code: Code::Cond {
            cond: c,
            then_arm: region(graph, params, then_r),
            else_arm: region(graph, params, else_r),
        },
        binds: graph.conds[c.0].results.clone(),
    }
}

/// The code of `statements`; `live_after` are the values read after them (the function's
/// outputs, or an arm's).
fn render(
    graph: &Graph,
    params: &[Param],
    statements: Vec<Statement>,
    live_after: &[NodeId],
) -> TokenStream {
    let rendered = statements
        .into_iter()
        .map(|s| Rendered {
            code: match s.code {
                Code::Plain { tokens, .. } => tokens,
                Code::Cond {
                    cond,
                    then_arm,
                    else_arm,
                } => cond_code(graph, params, cond, then_arm, else_arm),
            },
            binds: s.binds,
        })
        .collect();
    chunked(rendered, live_after)
}

/// The statements in order, in closures of [`CHUNK_STATEMENTS`] when there are more: each
/// `let (e5, e9,) = (|| -> Result<_, Error> { ..; Ok((e5, e9,)) })()?;` returns the values
/// it binds that a later statement or `live_after` reads, and borrows what it reads from
/// the chunks before it.
fn chunked(statements: Vec<Rendered>, live_after: &[NodeId]) -> TokenStream {
    if statements.len() <= CHUNK_STATEMENTS {
        return statements.into_iter().map(|s| s.code).collect();
    }
    let mut chunks: Vec<Vec<Rendered>> = Vec::new();
    let mut rest = statements.into_iter().peekable();
    while rest.peek().is_some() {
        chunks.push(rest.by_ref().take(CHUNK_STATEMENTS).collect());
    }
    // From the last chunk back: what the statements after each chunk read.
    let mut read_later: HashSet<usize> = live_after.iter().map(|v| v.0).collect();
    let mut emitted: Vec<TokenStream> = Vec::with_capacity(chunks.len());
    for chunk in chunks.into_iter().rev() {
        let returned: Vec<Ident> = chunk
            .iter()
            .flat_map(|s| &s.binds)
            .filter(|v| read_later.contains(&v.0))
            .map(|&v| e(v))
            .collect();
        let codes: Vec<&TokenStream> = chunk.iter().map(|s| &s.code).collect();
        emitted.push(quote! {
            let (#(#returned,)*) = (|| -> ::std::result::Result<_, ::grafo::Error> {
                #(#codes)*
                ::std::result::Result::Ok((#(#returned,)*))
            })()?;
        });
        for s in &chunk {
            read_values(&s.code, &mut read_later);
        }
    }
    emitted.into_iter().rev().collect()
}

/// Adds to `out` the value of every `eN` the code names (inner groups too).
fn read_values(code: &TokenStream, out: &mut HashSet<usize>) {
    for tt in code.clone() {
        match tt {
            TokenTree::Ident(i) => {
                let name = i.to_string();
                if let Some(n) = name.strip_prefix('e').and_then(|d| d.parse().ok()) {
                    out.insert(n);
                }
            }
            TokenTree::Group(g) => read_values(&g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

fn node_code(graph: &Graph, params: &[Param], id: NodeId) -> TokenStream {
    let n = graph.node(id);
    let vid = e(id);
    let ins: Vec<TokenStream> = n
        .inputs
        .iter()
        .map(|&i| {
            let x = e(i);
            quote!(#x.view())
        })
        .collect();
    let et = elem_ty(n.dtype);
    let ev = quote!(::grafo::eager);
    let call = |f: &str, args: &[TokenStream]| {
        let f = format_ident!("{}", f);
        quote!(#ev::#f(#(#args),*)?)
    };
    // An int division or `pow` checks its operands first and its error gets the source line.
    let checked_int =
        matches!(&n.op, Op::Binary(b) if n.dtype.is_int() && (b.divides() || *b == BinaryOp::Pow));
    let from_row = crate::ops::eager_operands_fn(&n.op).filter(|_| !checked_int);
    let value = match &n.op {
        // The ops whose row says their twin takes the operands alone.
        _ if from_row.is_some() => call(from_row.unwrap_or_default(), &ins),
        Op::Input { param } => {
            let Param::Tensor(t) = &params[*param] else {
                unreachable!("input of a tensor param")
            };
            let name = &t.name;
            quote!(#name.view().into_dyn())
        }
        Op::Const { value, .. } => {
            let l = literal(*value, n.dtype);
            quote!(::grafo::ndarray::arr0::<#et>(#l).into_dyn())
        }
        Op::Host { .. } => {
            let l = crate::emit::compiled::scalar_op(graph, id, &[]);
            quote!(::grafo::ndarray::arr0::<#et>(#l).into_dyn())
        }
        Op::Fill => {
            let x = e(n.inputs[0]);
            let shape = shape_expr(&n.shape);
            quote!(#ev::fill::<#et>(&#shape, ::grafo::__private::compiled::eager_scalar(&#x.view())?)?)
        }
        Op::Unary(UnaryOp::Gelu) => call("gelu", &[ins[0].clone(), quote!(false)]),
        Op::Unary(UnaryOp::GeluTanh) => call("gelu", &[ins[0].clone(), quote!(true)]),
        Op::Unary(u) => call(u.name(), &ins),
        Op::Binary(BinaryOp::LeakyRelu) => {
            let (x, alpha) = (&ins[0], e(n.inputs[1]));
            quote!(#ev::leaky_relu(#x, ::grafo::__private::compiled::eager_scalar(&#alpha.view())?)?)
        }
        Op::Binary(b) if checked_int => {
            // The check before the op fails first; the eager op checks again (it is public
            // API), and its error gets the line too.
            let f = format_ident!("{}", b.name());
            let line = n.line;
            quote!(#ev::#f(#(#ins),*).map_err(|e| e.at_line(#line))?)
        }
        // The operators (`+`, `-`, ...) have no rows; their twins are named like them.
        Op::Binary(b) => call(b.name(), &ins),
        Op::Select | Op::BiasAdd | Op::Norm => {
            unreachable!("their rows' twins take the operands (checked by the op table's tests)")
        }
        Op::Compare(c) => call(c.name(), &ins),
        Op::Cast => {
            let x = &ins[0];
            quote!(#ev::cast::<#et, _>(#x)?)
        }
        Op::Reduce {
            kind,
            axes,
            keep_dims,
        } => {
            let x = &ins[0];
            let f = format_ident!("{}", kind.name());
            let axes = axes.iter().map(|&a| a as isize);
            quote!(#ev::#f(#x, Some(&[#(#axes),*][..]), #keep_dims)?)
        }
        Op::MatMul {
            transpose_a: false,
            transpose_b: false,
        } => call("matmul", &ins),
        Op::MatMul {
            transpose_a,
            transpose_b,
        } => {
            // Op by op, a transposed operand is made first (only the compiled path reads it in place).
            let operand = |k: usize, transposed: bool| {
                let x = &ins[k];
                if !transposed {
                    return quote!(#x);
                }
                let rank = graph.node(n.inputs[k]).shape.len();
                let mut perm: Vec<usize> = (0..rank).collect();
                perm.swap(rank - 1, rank - 2);
                quote!(#ev::transpose(#x, Some(&[#(#perm),*][..]))?.view())
            };
            let (a, b) = (operand(0, *transpose_a), operand(1, *transpose_b));
            quote!(#ev::matmul(#a, #b)?)
        }
        Op::Transpose { perm } => {
            let x = &ins[0];
            quote!(#ev::transpose(#x, Some(&[#(#perm),*][..]))?)
        }
        Op::Reshape => {
            let x = &ins[0];
            let shape = shape_expr(&n.shape);
            quote!(#ev::reshape(#x, &#shape)?)
        }
        Op::Conv2d { stride, padding } => {
            let (x, k) = (&ins[0], &ins[1]);
            let pad = padding_tokens(*padding);
            quote!(#ev::conv2d(#x, #k, #stride, #pad)?)
        }
        Op::ConvGeneral {
            stride,
            dilation: [dh, dw],
            padding,
            depthwise,
        } => {
            let (x, k) = (&ins[0], &ins[1]);
            let pad = padding_tokens(*padding);
            let f = if *depthwise {
                format_ident!("depthwise_conv2d")
            } else {
                format_ident!("conv2d_dilated")
            };
            quote!(#ev::#f(#x, #k, #stride, #pad, [#dh, #dw])?)
        }
        Op::Pool {
            kind,
            ksize,
            strides,
            padding,
        } => {
            let x = &ins[0];
            let f = format_ident!("{}", kind.name());
            let pad = padding_tokens(*padding);
            let ([kh, kw], [sh, sw]) = (ksize, strides);
            quote!(#ev::#f(#x, [#kh, #kw], [#sh, #sw], #pad)?)
        }
        // The twins are named as the ops (`depthwise_conv2d_backprop_input`...).
        Op::Conv2dBackpropInput {
            stride,
            dilation: [dh, dw],
            padding,
            ..
        }
        | Op::Conv2dBackpropFilter {
            stride,
            dilation: [dh, dw],
            padding,
            ..
        } => {
            let (a, b) = (&ins[0], &ins[1]);
            let pad = padding_tokens(*padding);
            let f = format_ident!("{}", n.op.name());
            let shape = shape_expr(&n.shape);
            quote!(#ev::#f(#a, #b, &#shape, #stride, #pad, [#dh, #dw])?)
        }
        Op::PoolGrad {
            kind,
            ksize: [kh, kw],
            strides: [sh, sw],
            padding,
        } => {
            let pad = padding_tokens(*padding);
            let dy = &ins[0];
            match kind {
                PoolKind::Max => {
                    let x = &ins[1];
                    quote!(#ev::max_pool2d_grad(#x, #dy, [#kh, #kw], [#sh, #sw], #pad)?)
                }
                PoolKind::Avg => {
                    let shape = shape_expr(&n.shape);
                    quote!(#ev::avg_pool2d_grad(#dy, &#shape, [#kh, #kw], [#sh, #sw], #pad)?)
                }
            }
        }
        Op::Softmax { axis, log } => {
            let x = &ins[0];
            let f = if *log {
                format_ident!("log_softmax")
            } else {
                format_ident!("softmax")
            };
            let axis = *axis as isize;
            quote!(#ev::#f(#x, #axis)?)
        }
        Op::Assert { kind, message } => {
            let f = format_ident!("{}", kind.name());
            let line = n.line;
            let last = match kind.checked_op() {
                Some(op) => quote!(#op),
                None => quote!(#message),
            };
            return quote!(#ev::#f(#(#ins,)* #last).map_err(|e| e.at_line(#line))?;);
        }
        Op::Sel(_) => {
            let names: Vec<Ident> = n.inputs.iter().map(|&i| e(i)).collect();
            selection::value(n, &names)
        }
        Op::CondOut { .. } => unreachable!("conds are emitted whole"),
    };
    quote!(let #vid = #value;)
}

fn cond_code(
    graph: &Graph,
    params: &[Param],
    cid: CondId,
    then_arm: Vec<Statement>,
    else_arm: Vec<Statement>,
) -> TokenStream {
    let c = &graph.conds[cid.0];
    let pred = match &c.predicate {
        Predicate::Tensor(p) => {
            let x = e(*p);
            quote!(::grafo::__private::compiled::eager_scalar(&#x.view())?)
        }
        Predicate::Host(t) => quote!((#t)),
    };
    let last_result = c.results.iter().map(|r| r.0).max().unwrap_or(0);
    let used_later = |v: NodeId| {
        graph
            .nodes
            .iter()
            .enumerate()
            .any(|(i, n)| i > last_result && !n.poisoned && n.inputs.contains(&v))
            || graph.read_at_end(v)
    };
    let vals = |outs: &[NodeId], r: Region| -> Vec<TokenStream> {
        outs.iter()
            .enumerate()
            .map(|(k, &o)| {
                let x = e(o);
                let twice = outs[k + 1..].contains(&o);
                if graph.node(o).region == r && !twice
                    || !used_later(o) && !twice && !outs[..k].contains(&o)
                {
                    quote!(#x.into_owned())
                } else {
                    quote!(#x.to_owned())
                }
            })
            .collect()
    };
    let (then_r, else_r) = Region::arms(cid);
    let then_body = render(graph, params, then_arm, &c.then_outputs);
    let else_body = render(graph, params, else_arm, &c.else_outputs);
    let then_vals = vals(&c.then_outputs, then_r);
    let else_vals = vals(&c.else_outputs, else_r);
    let names: Vec<Ident> = c.results.iter().map(|&r| e(r)).collect();
    quote! {
        let (#(#names,)*) = if #pred {
            #then_body
            (#(#then_vals,)*)
        } else {
            #else_body
            (#(#else_vals,)*)
        };
    }
}
