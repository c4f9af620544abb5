//! Emits each repeated run of eager statements once, as a function of the body called at every place the run occurs (an unrolled loop's steps, a function inlined at several calls).
//!
//! `NAME::eager` is straight-line code, one op call per node; a 16-step GRU inlines its
//! cell 16 times and a 12-block GPT-2 its block 12 times, and LLVM's time grows faster than
//! the size of one function. Two runs of statements are the same computation when their
//! tokens are equal up to the names of the values (`eN`): the names are renumbered in the
//! order they first appear, and the values read from before the run (its free values), the
//! values it returns and their element types are part of the key. The first run of a key
//! becomes a nested function taking its free values as views (and the symbolic dims it
//! reads as `usize`), returning the values later statements read; each run, the first
//! included, becomes one call of it. Each op still runs once, on the same operands, in the
//! same order, so what every element computes is unchanged.

use super::{chunked, e, Code, Rendered, Statement};
use crate::emit::{elem_ty, format_ident, quote};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream, TokenTree};
use std::collections::{HashMap, HashSet};

/// The fewest statements a run must have to be outlined: a shorter one saves less code than
/// its call and function cost.
const MIN_RUN: usize = 8;

/// The most later places a run is compared with, so that the search stays linear in
/// practice on a long body of one repeated statement.
const MAX_CANDIDATES: usize = 64;

/// One run chosen to be replaced by a call: `len` statements of list `list` from `start`.
struct Run {
    list: usize,
    start: usize,
    len: usize,
    function: usize,
    free: Vec<NodeId>,
    dims: Vec<Ident>,
    returned: Vec<NodeId>,
}

/// A run's key and what its call needs.
struct Shape {
    key: String,
    free: Vec<NodeId>,
    dims: Vec<Ident>,
    returned: Vec<NodeId>,
}

/// Replaces each repeated run of statements in `main` and its conds' arms by a call;
/// returns the functions the calls call, to be put in the eager body.
pub(super) fn outline(graph: &Graph, params: &[Param], main: &mut Vec<Statement>) -> TokenStream {
    let names = param_names(params);
    let mut lists: Vec<Vec<Option<(NodeId, &TokenStream)>>> = Vec::new();
    collect_lists(main, &names, &mut lists);
    let read_outside = Reads::new(graph);
    // One sequence of statement keys over every list, a distinct separator between lists
    // and a distinct key for each statement that cannot be outlined.
    let mut seq: Vec<usize> = Vec::new();
    let mut place: Vec<(usize, usize)> = Vec::new();
    let mut interned: HashMap<String, usize> = HashMap::new();
    let mut unique = usize::MAX;
    for (l, list) in lists.iter().enumerate() {
        for (k, s) in list.iter().enumerate() {
            let key = match s {
                Some((_, tokens)) => {
                    let text = local_key(tokens);
                    let next = interned.len();
                    *interned.entry(text).or_insert(next)
                }
                None => {
                    unique -= 1;
                    unique
                }
            };
            seq.push(key);
            place.push((l, k));
        }
        unique -= 1;
        seq.push(unique);
        place.push((l, list.len()));
    }
    let mut grams: HashMap<&[usize], Vec<usize>> = HashMap::new();
    for p in 0..seq.len().saturating_sub(MIN_RUN - 1) {
        grams.entry(&seq[p..p + MIN_RUN]).or_default().push(p);
    }
    let mut covered = vec![false; seq.len()];
    let mut runs: Vec<Run> = Vec::new();
    let mut functions: Vec<TokenStream> = Vec::new();
    for p in 0..seq.len().saturating_sub(MIN_RUN - 1) {
        if covered[p] {
            continue;
        }
        let Some(candidates) = grams.get(&seq[p..p + MIN_RUN]) else {
            continue;
        };
        // Each later place and how many statements from it equal those from `p`.
        let mut matches: Vec<(usize, usize)> = Vec::new();
        for &q in candidates.iter().filter(|&&q| q > p).take(MAX_CANDIDATES) {
            let mut len = 0;
            while q + len < seq.len()
                && p + len < q
                && seq[p + len] == seq[q + len]
                && !covered[p + len]
                && !covered[q + len]
            {
                len += 1;
            }
            if len >= MIN_RUN {
                matches.push((q, len));
            }
        }
        // The length saving the most statements.
        let Some(len) = matches
            .iter()
            .map(|&(_, l)| l)
            .max_by_key(|&l| (l * matches.iter().filter(|&&(_, m)| m >= l).count(), l))
        else {
            continue;
        };
        let (pl, pk) = place[p];
        let first = run_shape(graph, &read_outside, &lists[pl][pk..pk + len]);
        let mut taken: Vec<(usize, Shape)> = Vec::new();
        let mut end = p + len;
        for &(q, m) in &matches {
            if m < len || q < end {
                continue;
            }
            let (ql, qk) = place[q];
            let shape = run_shape(graph, &read_outside, &lists[ql][qk..qk + len]);
            if shape.key == first.key {
                end = q + len;
                taken.push((q, shape));
            }
        }
        if taken.is_empty() {
            continue;
        }
        let function = functions.len();
        functions.push(function_item(
            graph,
            function,
            &lists[pl][pk..pk + len],
            &first,
        ));
        taken.insert(0, (p, first));
        for (at, shape) in taken {
            covered[at..at + len].iter_mut().for_each(|c| *c = true);
            let (list, start) = place[at];
            runs.push(Run {
                list,
                start,
                len,
                function,
                free: shape.free,
                dims: shape.dims,
                returned: shape.returned,
            });
        }
    }
    drop(lists);
    let mut by_list: HashMap<usize, Vec<Run>> = HashMap::new();
    for r in runs {
        by_list.entry(r.list).or_default().push(r);
    }
    let mut next_list = 0;
    replace_runs(main, &mut by_list, &mut next_list);
    functions.into_iter().collect()
}

/// Every name a statement may read from the function's scope rather than from a value: the
/// parameters (and the struct parameters' roots). A statement naming one is not outlined.
fn param_names(params: &[Param]) -> HashSet<String> {
    let mut names = HashSet::new();
    for p in params {
        match p {
            Param::Tensor(t) => {
                names.insert(t.name.to_string());
                if let Some(f) = &t.field {
                    names.insert(f.root.to_string());
                }
            }
            Param::Host(h) => {
                names.insert(h.name.to_string());
            }
        }
    }
    names
}

/// Appends `list` and then its conds' arms (depth first) to `lists`: a statement that can be
/// outlined as its node and tokens, any other as `None`.
fn collect_lists<'s>(
    list: &'s [Statement],
    names: &HashSet<String>,
    lists: &mut Vec<Vec<Option<(NodeId, &'s TokenStream)>>>,
) {
    let mut this = Vec::with_capacity(list.len());
    let mut arms = Vec::new();
    for s in list {
        match &s.code {
            Code::Plain {
                tokens,
                node: Some(id),
            } if !names_any(tokens, names) => this.push(Some((*id, tokens))),
            Code::Plain { .. } => this.push(None),
            Code::Cond {
                then_arm, else_arm, ..
            } => {
                this.push(None);
                arms.push(then_arm);
                arms.push(else_arm);
            }
        }
    }
    lists.push(this);
    for arm in arms {
        collect_lists(arm, names, lists);
    }
}

/// Replaces the runs of each list, visiting the lists in the order of [`collect_lists`].
fn replace_runs(list: &mut Vec<Statement>, runs: &mut HashMap<usize, Vec<Run>>, next: &mut usize) {
    let this = *next;
    *next += 1;
    for s in list.iter_mut() {
        if let Code::Cond {
            then_arm, else_arm, ..
        } = &mut s.code
        {
            replace_runs(then_arm, runs, next);
            replace_runs(else_arm, runs, next);
        }
    }
    let Some(mut mine) = runs.remove(&this) else {
        return;
    };
    // From the last run back, so that the earlier starts stay valid.
    mine.sort_by_key(|r| std::cmp::Reverse(r.start));
    for r in mine {
        let f = function_name(r.function);
        let returned: Vec<Ident> = r.returned.iter().map(|&v| e(v)).collect();
        let free = r.free.iter().map(|&v| e(v));
        let dims = &r.dims;
        let tokens = quote! {
            let (#(#returned,)*) = #f(#(#free.view(),)* #(#dims,)*)?;
        };
        let call = Statement {
            code: Code::Plain { tokens, node: None },
            binds: r.returned,
        };
        list.splice(r.start..r.start + r.len, [call]);
    }
}

fn function_name(k: usize) -> Ident {
    format_ident!("__grafo_eager_run{}", k)
}

/// The nested function of a run: its free values as views, its dims as `usize`, its
/// statements, the values it returns.
fn function_item(
    graph: &Graph,
    k: usize,
    run: &[Option<(NodeId, &TokenStream)>],
    shape: &Shape,
) -> TokenStream {
    let name = function_name(k);
    let free = shape.free.iter().map(|&v| {
        let id = e(v);
        let et = elem_ty(graph.node(v).dtype);
        quote!(#id: ::grafo::ndarray::ArrayView<'_, #et, ::grafo::ndarray::IxDyn>)
    });
    let dims = &shape.dims;
    let returned: Vec<Ident> = shape.returned.iter().map(|&v| e(v)).collect();
    let types = shape.returned.iter().map(|&v| {
        let et = elem_ty(graph.node(v).dtype);
        quote!(::grafo::ndarray::ArrayD<#et>)
    });
    let statements: Vec<Rendered> = run
        .iter()
        .map(|s| {
            let (id, tokens) = s.expect("a run holds outlinable statements");
            let binds = match graph.node(id).op {
                Op::Assert { .. } => Vec::new(),
                _ => vec![id],
            };
            Rendered {
                code: tokens.clone(),
                binds,
            }
        })
        .collect();
    let body = chunked(statements, &shape.returned);
    quote! {
        #[inline(never)]
        fn #name(#(#free,)* #(#dims: usize,)*) -> ::std::result::Result<(#(#types,)*), ::grafo::Error> {
            #body
            ::std::result::Result::Ok((#(#returned,)*))
        }
    }
}

/// Which values are read where: by which nodes, and whether at the end or by a cond.
struct Reads {
    users: Vec<Vec<NodeId>>,
    elsewhere: HashSet<NodeId>,
}

impl Reads {
    fn new(graph: &Graph) -> Reads {
        let mut users = vec![Vec::new(); graph.nodes.len()];
        for (i, n) in graph.nodes.iter().enumerate() {
            if n.poisoned {
                continue;
            }
            for &x in &n.inputs {
                users[x.0].push(NodeId(i));
            }
        }
        let mut elsewhere: HashSet<NodeId> = graph.outputs.iter().copied().collect();
        elsewhere.extend(graph.writebacks.iter().map(|&(_, w)| w));
        for c in &graph.conds {
            elsewhere.extend(c.then_outputs.iter().chain(&c.else_outputs).copied());
            if let Predicate::Tensor(p) = c.predicate {
                elsewhere.insert(p);
            }
        }
        Reads { users, elsewhere }
    }
}

/// The key of a run and its free values, dims and returned values.
fn run_shape(graph: &Graph, reads: &Reads, run: &[Option<(NodeId, &TokenStream)>]) -> Shape {
    let nodes: HashSet<NodeId> = run.iter().flatten().map(|&(id, _)| id).collect();
    let mut numbering: HashMap<usize, usize> = HashMap::new();
    let mut free = Vec::new();
    let mut dims: Vec<Ident> = Vec::new();
    let mut key = String::new();
    for (id, tokens) in run.iter().flatten() {
        key.push_str(&format!("{:?};", graph.node(*id).dtype));
        write_key(tokens, &mut numbering, &mut key, &mut |n| {
            let v = NodeId(n);
            if !nodes.contains(&v) && !free.contains(&v) {
                free.push(v);
            }
        });
        collect_dims(tokens, &mut dims);
    }
    dims.sort_by_key(|d| d.to_string());
    dims.dedup_by_key(|d| d.to_string());
    let returned: Vec<NodeId> = run
        .iter()
        .flatten()
        .map(|&(id, _)| id)
        .filter(|&id| !matches!(graph.node(id).op, Op::Assert { .. }))
        .filter(|id| {
            reads.elsewhere.contains(id) || reads.users[id.0].iter().any(|u| !nodes.contains(u))
        })
        .collect();
    key.push('|');
    for v in &free {
        key.push_str(&format!("{:?},", graph.node(*v).dtype));
    }
    key.push('|');
    for v in &returned {
        key.push_str(&format!("{},", numbering[&v.0]));
    }
    Shape {
        key,
        free,
        dims,
        returned,
    }
}

/// The value a name `eN` stands for.
fn value_of(name: &str) -> Option<usize> {
    name.strip_prefix('e').and_then(|d| d.parse().ok())
}

/// Whether `tokens` name one of `names`.
fn names_any(tokens: &TokenStream, names: &HashSet<String>) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => names.contains(&i.to_string()),
        TokenTree::Group(g) => names_any(&g.stream(), names),
        _ => false,
    })
}

/// The symbolic dims (`__dim_B`, `__dimp_..`) `tokens` read.
fn collect_dims(tokens: &TokenStream, out: &mut Vec<Ident>) {
    for t in tokens.clone() {
        match t {
            TokenTree::Ident(i) if i.to_string().starts_with("__dim") => out.push(i),
            TokenTree::Group(g) => collect_dims(&g.stream(), out),
            _ => {}
        }
    }
}

/// A statement's tokens as text with its values' names numbered in the order they appear:
/// equal for the same statement at every step.
fn local_key(tokens: &TokenStream) -> String {
    let mut key = String::new();
    write_key(tokens, &mut HashMap::new(), &mut key, &mut |_| {});
    key
}

/// Writes `tokens` as text into `key`, each value's name `eN` as `#k` with `k` its number in
/// the order names first appear (`numbering`); `seen` gets every value read or bound.
fn write_key(
    tokens: &TokenStream,
    numbering: &mut HashMap<usize, usize>,
    key: &mut String,
    seen: &mut impl FnMut(usize),
) {
    for t in tokens.clone() {
        match t {
            TokenTree::Ident(i) => {
                let name = i.to_string();
                match value_of(&name) {
                    Some(n) => {
                        let next = numbering.len();
                        let k = *numbering.entry(n).or_insert(next);
                        seen(n);
                        key.push_str(&format!("#{k} "));
                    }
                    None => {
                        key.push_str(&name);
                        key.push(' ');
                    }
                }
            }
            TokenTree::Group(g) => {
                key.push(match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => '(',
                    proc_macro2::Delimiter::Brace => '{',
                    proc_macro2::Delimiter::Bracket => '[',
                    proc_macro2::Delimiter::None => '~',
                });
                write_key(&g.stream(), numbering, key, seen);
                key.push(')');
            }
            TokenTree::Punct(p) => key.push(p.as_char()),
            TokenTree::Literal(l) => {
                key.push_str(&l.to_string());
                key.push(' ');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The eager function's text of the expansion of `item`.
    fn eager_text(item: proc_macro2::TokenStream) -> String {
        let out = crate::expand::expand(quote!(), item).to_string();
        let at = out.find("pub fn eager").expect("an eager function");
        out[at..].to_string()
    }

    #[test]
    fn an_unrolled_loop_calls_one_function_per_step() {
        let text = eager_text(quote! {
            pub fn steps(x: Tensor<f32, B, 12, 4>, h0: Tensor<f32, B, 4>, w: Tensor<f32, 4, 4>, u: Tensor<f32, 4, 4>) -> Tensor<f32, B, 4> {
                let mut h = h0;
                for t in 0..12 {
                    let z = sigmoid(matmul(x[s![.., t, ..]], w) + matmul(h, u));
                    let n = tanh(matmul(h * z, u) + 1.0);
                    h = (1.0 - z) * n + z * h;
                }
                h
            }
        });
        assert_eq!(text.matches("fn __grafo_eager_run").count(), 1, "{text}");
        // The first step reads the parameter `h0` itself, every later one the step before.
        let calls = text.matches("__grafo_eager_run0 (").count() - 1;
        assert!((11..=12).contains(&calls), "{calls} calls: {text}");
    }

    #[test]
    fn steps_in_conds_call_one_function() {
        // `tests/eager_outlining.rs`'s `gated`: each step is the then-arm of its own cond.
        let text = eager_text(quote! {
            pub fn gated(x: Tensor<f32, B, 12, 3>, h0: Tensor<f32, B, 3>, w: Tensor<f32, 3, 3>, u: Tensor<f32, 3, 3>, b: Tensor<f32, 3>, tol: Tensor<f32>) -> (Tensor<f32, B, 3>, Tensor<f32>) {
                let mut h = h0;
                let mut running = constant(1.0);
                let mut taken = constant(0.0);
                for t in 0..12 {
                    if running > 0.5 {
                        let z = sigmoid(matmul(x[s![.., t, ..]], w) + matmul(h, u) + b);
                        let n = tanh(matmul(h * z, u) - b);
                        let next = (1.0 - z) * n + z * h;
                        running = select(reduce_max(abs(next - h)) < tol, 0.0, 1.0);
                        taken = taken + 1.0;
                        h = next;
                    }
                }
                (h, taken)
            }
        });
        assert_eq!(text.matches("fn __grafo_eager_run").count(), 1, "{text}");
        assert_eq!(
            text.matches("__grafo_eager_run0 (").count() - 1,
            12,
            "{text}"
        );
    }

    #[test]
    fn steps_differing_every_few_statements_are_not_merged() {
        let text = eager_text(quote! {
            pub fn steps(x: Tensor<f32, 4, 8>, h0: Tensor<f32, 8>) -> Tensor<f32, 8> {
                let mut h = h0;
                for t in 0..4 {
                    h = tanh(h * x[s![t, ..]]) + sigmoid(h);
                    h = exp(h - x[s![t, ..]]) * 2.0;
                }
                h
            }
        });
        // Each step slices row `t`, a literal of the slice, within fewer statements than a
        // run needs.
        assert!(!text.contains("__grafo_eager_run"), "{text}");
    }
}
