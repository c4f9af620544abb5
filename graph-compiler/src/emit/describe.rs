//! Emits `NAME::graph()`: the optimised graph, its cond subgraphs, fusion groups, schedule and buffer plan as a `grafo::GraphDef`.

use crate::emit::quote;
use crate::fuse::Plan;
use crate::ir::*;
use crate::schedule::Schedule;
use proc_macro2::TokenStream;

fn dtype_tokens(dt: DType) -> TokenStream {
    let v = crate::emit::ident(dt.variant());
    quote!(::grafo::DType::#v)
}

/// A shape as owned `Dim`s (the inputs' shapes).
fn dims_tokens(shape: &[Dim]) -> TokenStream {
    let ds = shape.iter().map(|d| match d {
        Dim::Const(n) => {
            let n = *n as usize;
            quote!(::grafo::Dim::Static(#n))
        }
        Dim::Sym(s) => quote!(::grafo::Dim::Symbol(::std::string::String::from(#s))),
        Dim::Prod(m) => {
            let text = m.to_string();
            quote!(::grafo::Dim::Expr(::std::string::String::from(#text)))
        }
    });
    quote!(::std::vec![#(#ds),*])
}

/// A shape as static `DimRow`s (the tables' shapes).
fn dim_rows(shape: &[Dim]) -> TokenStream {
    let ds = shape.iter().map(|d| match d {
        Dim::Const(n) => {
            let n = *n as usize;
            quote!(::grafo::__private::describe::DimRow::Static(#n))
        }
        Dim::Sym(s) => quote!(::grafo::__private::describe::DimRow::Symbol(#s)),
        Dim::Prod(m) => {
            let text = m.to_string();
            quote!(::grafo::__private::describe::DimRow::Expr(#text))
        }
    });
    quote!(&[#(#ds),*])
}

fn region_tokens(r: Region, cond_index: &[Option<usize>]) -> TokenStream {
    match r {
        Region::Main => quote!(::grafo::Region::Main),
        Region::Arm { cond, then_arm } => {
            let c = cond_index[cond.0].unwrap_or(cond.0);
            quote!(::grafo::Region::CondArm { cond: #c, then_arm: #then_arm })
        }
    }
}

/// The body of `graph()`, building the `GraphDef` from static tables of rows (one per node,
/// cond, group and buffer: data of any length, where one constructor expression per node
/// made a function that a 5,000-op program's release build spent gigabytes on).
pub fn body(
    name: &str,
    graph: &Graph,
    params: &[Param],
    plan: &Plan,
    sched: &Schedule,
    passes: &[&str],
) -> TokenStream {
    // Live nodes, renumbered densely.
    let index: Vec<Option<usize>> = {
        let mut k = 0;
        plan.live
            .iter()
            .map(|&l| {
                if l {
                    k += 1;
                    Some(k - 1)
                } else {
                    None
                }
            })
            .collect()
    };
    let live_conds: Vec<usize> = graph
        .conds
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            !c.removed
                && (c.results.iter().any(|r| plan.live[r.0])
                    || plan.groups.iter().any(|g| g.cond == Some(CondId(i))))
        })
        .map(|(i, _)| i)
        .collect();
    let cond_index: Vec<Option<usize>> = (0..graph.conds.len())
        .map(|i| live_conds.iter().position(|&c| c == i))
        .collect();
    let roles = graph.roles();
    let saved = graph.saved(&plan.live);
    let mut nodes = Vec::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        let Some(id) = index[i] else { continue };
        let nm = n
            .name
            .clone()
            .unwrap_or_else(|| format!("{}_{}", n.op.name(), id));
        let op = n.op.name();
        let inputs: Vec<usize> = n.inputs.iter().filter_map(|x| index[x.0]).collect();
        let dt = dtype_tokens(n.dtype);
        let shape = dim_rows(&n.shape);
        let line = n.line;
        let attrs: Vec<(String, String)> = match &n.op {
            Op::Const { value, .. } => vec![("value".into(), value.to_string())],
            Op::Reduce {
                axes, keep_dims, ..
            } => vec![
                ("axes".into(), format!("{axes:?}")),
                ("keep_dims".into(), keep_dims.to_string()),
            ],
            Op::Transpose { perm } => vec![("perm".into(), format!("{perm:?}"))],
            Op::MatMul {
                transpose_a,
                transpose_b,
            } => [("transpose_a", *transpose_a), ("transpose_b", *transpose_b)]
                .iter()
                .filter(|(_, on)| *on)
                .map(|(k, _)| (k.to_string(), "true".into()))
                .collect(),
            Op::Conv2d { stride, padding } => vec![
                ("stride".into(), stride.to_string()),
                ("padding".into(), format!("{padding:?}").to_uppercase()),
            ],
            Op::Softmax { axis, .. } => vec![("axis".into(), axis.to_string())],
            Op::ConvGeneral {
                stride,
                dilation,
                padding,
                ..
            } => vec![
                ("stride".into(), stride.to_string()),
                ("dilations".into(), format!("{dilation:?}")),
                ("padding".into(), format!("{padding:?}").to_uppercase()),
            ],
            Op::Conv2dBackpropInput {
                stride,
                dilation,
                padding,
                ..
            }
            | Op::Conv2dBackpropFilter {
                stride,
                dilation,
                padding,
                ..
            } => vec![
                ("stride".into(), stride.to_string()),
                ("dilations".into(), format!("{dilation:?}")),
                ("padding".into(), format!("{padding:?}").to_uppercase()),
            ],
            Op::Pool {
                ksize,
                strides,
                padding,
                ..
            }
            | Op::PoolGrad {
                ksize,
                strides,
                padding,
                ..
            } => vec![
                ("ksize".into(), format!("{ksize:?}")),
                ("strides".into(), format!("{strides:?}")),
                ("padding".into(), format!("{padding:?}").to_uppercase()),
            ],
            Op::Unary(u @ (UnaryOp::Gelu | UnaryOp::GeluTanh)) => {
                vec![("approximate".into(), (*u == UnaryOp::GeluTanh).to_string())]
            }
            Op::Assert { message, .. } => vec![("message".into(), message.clone())],
            Op::Host { expr } => vec![("expr".into(), expr.clone())],
            Op::Sel(s) => crate::lower::selection_attrs(s),
            Op::CondOut { cond, index } => vec![
                (
                    "cond".into(),
                    cond_index[cond.0].unwrap_or(cond.0).to_string(),
                ),
                ("output".into(), index.to_string()),
            ],
            _ => vec![],
        };
        let attrs = attrs.iter().map(|(k, v)| quote!((#k, #v)));
        let region = region_tokens(n.region, &cond_index);
        let group = match plan.group_of[i] {
            Some(g) => quote!(::std::option::Option::Some(#g)),
            None => quote!(::std::option::Option::None),
        };
        let role = crate::emit::ident(match roles[i] {
            Role::Forward => "Forward",
            Role::Backward => "Backward",
            Role::Update => "Update",
        });
        // A value fusion inlines is computed again inside each loop that reads it, the
        // backward's too: only a materialised one is kept for the backward pass.
        let is_saved = saved[i] && plan.materialised[i];
        debug_assert_eq!(id, nodes.len(), "a node's id is its row");
        nodes.push(quote!(::grafo::__private::describe::NodeRow {
            name: #nm,
            op: #op,
            inputs: &[#(#inputs),*],
            dtype: #dt,
            shape: #shape,
            line: #line,
            attrs: &[#(#attrs),*],
            region: #region,
            group: #group,
            role: ::grafo::Role::#role,
            saved: #is_saved,
        }));
    }
    let mut conds = Vec::new();
    for (k, &ci) in live_conds.iter().enumerate() {
        let c = &graph.conds[ci];
        let pred = match c.predicate {
            Predicate::Tensor(p) => index[p.0].unwrap_or(usize::MAX),
            Predicate::Host(_) => usize::MAX,
        };
        let outs = c
            .names
            .iter()
            .zip(c.then_outputs.iter().zip(&c.else_outputs))
            .map(|(nm, (t, e))| {
                let (t, e) = (
                    index[t.0].unwrap_or(usize::MAX),
                    index[e.0].unwrap_or(usize::MAX),
                );
                quote!((#nm, #t, #e))
            });
        let node = c
            .results
            .first()
            .and_then(|r| index[r.0])
            .unwrap_or(usize::MAX);
        debug_assert_eq!(k, conds.len(), "a cond's id is its row");
        conds.push(quote!(::grafo::__private::describe::CondRow { predicate: #pred, outputs: &[#(#outs),*], node: #node }));
    }
    let mut groups = Vec::new();
    for g in &plan.groups {
        let id = g.id;
        let kind = g.kind.name();
        let gnodes: Vec<usize> = g.nodes.iter().filter_map(|x| index[x.0]).collect();
        let output = index[g.root.0].unwrap_or(usize::MAX);
        let buffer = match sched.slot[g.root.0] {
            Some(s) if !sched.fresh[g.root.0] => quote!(::std::option::Option::Some(#s)),
            _ => quote!(::std::option::Option::None),
        };
        let region = region_tokens(g.region, &cond_index);
        let in_place = sched.in_place[g.root.0].is_some();
        let records_for = match g.records_for {
            Some(r) => quote!(::std::option::Option::Some(#r)),
            None => quote!(::std::option::Option::None),
        };
        groups.push(quote!(::grafo::__private::describe::GroupRow {
            id: #id,
            kind: #kind,
            nodes: &[#(#gnodes),*],
            output: #output,
            buffer: #buffer,
            in_place: #in_place,
            region: #region,
            records_for: #records_for,
        }));
    }
    let schedule = plan.groups.len();
    let mut buffers = Vec::new();
    for (s, (dt, values)) in sched.slots.iter().enumerate() {
        let dtt = dtype_tokens(*dt);
        let sizes: Vec<String> = values
            .iter()
            .map(|v| Monomial::of(&graph.node(*v).shape).to_string())
            .collect();
        let size = if sizes.len() == 1 {
            sizes[0].clone()
        } else {
            format!("max({})", sizes.join(", "))
        };
        let vals: Vec<usize> = values.iter().filter_map(|x| index[x.0]).collect();
        debug_assert_eq!(s, buffers.len(), "a buffer's id is its row");
        buffers.push(quote!(::grafo::__private::describe::BufferRow { dtype: #dtt, size: #size, values: &[#(#vals),*] }));
    }
    let mut inputs = Vec::new();
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Tensor(t) => {
                let nm = t.label();
                let dt = dtype_tokens(t.dtype);
                let shape = dims_tokens(&t.shape);
                let node = graph
                    .nodes
                    .iter()
                    .position(|n| n.op == Op::Input { param: i })
                    .and_then(|x| index[x]);
                let node = match node {
                    Some(x) => quote!(::std::option::Option::Some(#x)),
                    None => quote!(::std::option::Option::None),
                };
                let written = graph
                    .writebacks
                    .iter()
                    .find(|&&(p, w)| p == i && graph.node(w).op != (Op::Input { param: i }))
                    .and_then(|&(_, w)| index[w.0]);
                let written = match written {
                    Some(x) => quote!(::std::option::Option::Some(#x)),
                    None => quote!(::std::option::Option::None),
                };
                inputs.push(quote!(::grafo::InputDef { name: ::std::string::String::from(#nm), dtype: ::std::option::Option::Some(#dt), shape: #shape, node: #node, written_from: #written }));
            }
            Param::Host(h) => {
                let nm = h.name.to_string();
                inputs.push(quote!(::grafo::InputDef { name: ::std::string::String::from(#nm), dtype: ::std::option::Option::None, shape: ::std::vec::Vec::new(), node: ::std::option::Option::None, written_from: ::std::option::Option::None }));
            }
        }
    }
    let outputs: Vec<usize> = graph.outputs.iter().filter_map(|o| index[o.0]).collect();
    quote! {
        static __GRAFO_NODES: &[::grafo::__private::describe::NodeRow] = &[#(#nodes),*];
        static __GRAFO_CONDS: &[::grafo::__private::describe::CondRow] = &[#(#conds),*];
        static __GRAFO_GROUPS: &[::grafo::__private::describe::GroupRow] = &[#(#groups),*];
        static __GRAFO_BUFFERS: &[::grafo::__private::describe::BufferRow] = &[#(#buffers),*];
        static __GRAFO_OUTPUTS: &[usize] = &[#(#outputs),*];
        ::grafo::GraphDef {
            name: ::std::string::String::from(#name),
            inputs: ::std::vec![#(#inputs),*],
            nodes: ::grafo::__private::describe::nodes(__GRAFO_NODES),
            conds: ::grafo::__private::describe::conds(__GRAFO_CONDS),
            groups: ::grafo::__private::describe::groups(__GRAFO_GROUPS),
            schedule: (0..#schedule).collect(),
            buffers: ::grafo::__private::describe::buffers(__GRAFO_BUFFERS),
            outputs: __GRAFO_OUTPUTS.to_vec(),
            passes: ::std::vec![#(::std::string::String::from(#passes)),*],
        }
    }
}
