//! Unit tests of the rematerialisation pass: the minimum cut on tiny networks, and the graph after the pass.

use super::*;
use crate::diag::Diagnostics;
use crate::passes::{self, PassConfig};
use crate::signature::parse_signature;
use quote::quote;

fn optimised(item: proc_macro2::TokenStream, config: &PassConfig) -> Graph {
    let func: syn::ItemFn = syn::parse2(item).expect("a function");
    let mut diag = Diagnostics::default();
    let sig = parse_signature(&func.sig, &mut diag);
    let mut g = crate::lower::lower(
        &sig,
        &func.block,
        func.sig.ident.span().into(),
        &mut diag,
        &crate::lower::Callees::default(),
    )
    .graph;
    passes::optimise(&mut g, config, &mut diag);
    assert!(!diag.has_errors());
    g
}

fn no_recompute() -> PassConfig {
    PassConfig {
        recompute: false,
        ..PassConfig::default()
    }
}

/// The live nodes' names with their roles, and which of them are saved.
fn saved_names(g: &Graph) -> Vec<String> {
    let live = passes::dce::live_nodes(g);
    let saved = g.saved(&live);
    g.nodes
        .iter()
        .enumerate()
        .filter(|&(i, n)| saved[i] && !matches!(n.op, Op::Input { .. }))
        .map(|(_, n)| n.name.clone().unwrap_or_else(|| n.op.name()))
        .collect()
}

/// `h = exp(x * w)` is read by the backward pass twice (for `h * h` and for `exp`'s own
/// rule); it is a cheap chain of the parameters, which cost nothing to keep.
fn exp_chain() -> proc_macro2::TokenStream {
    quote! {
        fn f(x: Tensor<f32, N>, w: Tensor<f32, N>) -> (Tensor<f32>, Tensor<f32, N>) {
            let a = x * w;
            let h = exp(a);
            let loss = reduce_sum(h * h);
            (loss, gradients(loss, w))
        }
    }
}

#[test]
fn the_backward_recomputes_a_cheap_chain_of_parameters() {
    let kept = optimised(exp_chain(), &no_recompute());
    assert_eq!(saved_names(&kept), vec!["h"]);

    let g = optimised(exp_chain(), &PassConfig::default());
    assert!(saved_names(&g).is_empty(), "{:?}", saved_names(&g));
    let roles = g.roles();
    let live = passes::dce::live_nodes(&g);
    let copies: Vec<(&str, Role)> = g
        .nodes
        .iter()
        .enumerate()
        .filter(|&(i, n)| {
            live[i]
                && n.name
                    .as_deref()
                    .is_some_and(|s| s.starts_with("recompute/"))
        })
        .map(|(i, n)| (n.name.as_deref().unwrap_or(""), roles[i]))
        .collect();
    assert_eq!(
        copies,
        vec![
            ("recompute/a", Role::Backward),
            ("recompute/h", Role::Backward)
        ]
    );
    // The copies read what the originals read, and every operand comes before its reader.
    for (i, n) in g.nodes.iter().enumerate() {
        assert!(
            n.inputs.iter().all(|x| x.0 < i),
            "node {i} reads a later node"
        );
    }
    // The forward `h` now dies in the forward pass: fewer bytes are held into the backward.
    let (before, after) = (
        held(&kept, &no_recompute()),
        held(&g, &PassConfig::default()),
    );
    assert!(
        after.across < before.across,
        "{} -> {}",
        before.across,
        after.across
    );
    assert!(after.buffers <= before.buffers);
}

#[test]
fn a_value_only_a_matmul_gives_is_kept() {
    // `h` is read by the backward pass (relu's rule, `h`'s matmul gradient) and comes from a
    // matmul, which is never recomputed: the graph stays as it was.
    let src = quote! {
        fn f(x: Tensor<f32, B, 8>, w1: Tensor<f32, 8, 16>, w2: Tensor<f32, 16, 4>) -> Tensor<f32, 8, 16> {
            let h = relu(matmul(x, w1));
            let loss = reduce_sum(matmul(h, w2));
            gradients(loss, w1)
        }
    };
    let kept = optimised(src.clone(), &no_recompute());
    let g = optimised(src, &PassConfig::default());
    assert_eq!(g.nodes.len(), kept.nodes.len());
    assert_eq!(saved_names(&g), vec!["h"]);
}

#[test]
fn a_graph_without_gradients_is_left_alone() {
    let src = quote! {
        fn f(x: Tensor<f32, N>) -> Tensor<f32, N> { exp(x) * x }
    };
    let mut g = optimised(src, &no_recompute());
    let n = g.nodes.len();
    assert!(!run(&mut g, &PassConfig::default()));
    assert_eq!(g.nodes.len(), n);
    assert!(g.roles().iter().all(|&r| r == Role::Forward));
}

#[test]
fn roles_mark_forward_backward_and_update() {
    let g = optimised(
        quote! {
            fn step(x: Tensor<f32, N>, w: &mut Tensor<f32, N>) -> Tensor<f32> {
                let loss = reduce_sum(square(x * w));
                let gw = gradients(loss, w);
                w = w - 0.1 * gw;
                loss
            }
        },
        &PassConfig::default(),
    );
    let live = passes::dce::live_nodes(&g);
    let roles = g.roles();
    let role_of = |name: &str| {
        let i = g
            .nodes
            .iter()
            .position(|n| n.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no node {name}"));
        roles[i]
    };
    assert_eq!(role_of("loss"), Role::Forward);
    assert_eq!(role_of("gradients/d_w"), Role::Backward);
    let (_, new_w) = g.writebacks[0];
    assert_eq!(roles[new_w.0], Role::Update);
    assert!(live[new_w.0]);
}

#[test]
fn the_minimum_cut_keeps_the_cheapest_values() {
    // s -> a(in) -[5]-> a(out) -> b(in) -[2]-> b(out) -> t, with a banned (from the source):
    // the cut is b's edge, 2.
    let mut net = Network::new(6);
    let (s, t) = (4, 5);
    net.add(s, 0, INF);
    net.add(0, 1, 5);
    net.add(1, 2, INF);
    net.add(2, 3, 2);
    net.add(3, t, INF);
    let reach = net.max_flow_cut(s, t);
    assert_eq!(reach, vec![true, true, true, false, true, false]);
    // Two paths share nothing: both are cut.
    let mut net = Network::new(4);
    net.add(2, 0, 3);
    net.add(0, 3, 4);
    net.add(2, 1, 7);
    net.add(1, 3, 1);
    let reach = net.max_flow_cut(2, 3);
    assert_eq!(reach, vec![false, true, true, false]);
}

#[test]
fn reorder_renames_every_reference() {
    let mut g = optimised(
        quote! {
            fn f(x: Tensor<f32, N>, c: Tensor<bool>) -> Tensor<f32, N> {
                let mut y = x;
                if c { y = exp(x); } else { y = -x; }
                y + 1.0
            }
        },
        &PassConfig::default(),
    );
    let n = g.nodes.len();
    let ops_before: Vec<String> = g.nodes.iter().map(|n| n.op.name()).collect();
    // Swap the two inputs (neither reads anything), keep the rest.
    let mut order: Vec<NodeId> = (0..n).map(NodeId).collect();
    order.swap(0, 1);
    g.reorder(&order);
    let ops_after: Vec<String> = g.nodes.iter().map(|n| n.op.name()).collect();
    assert_eq!(ops_after[0], ops_before[1]);
    assert_eq!(ops_after[1], ops_before[0]);
    let Predicate::Tensor(p) = g.conds[0].predicate else {
        panic!("a tensor predicate");
    };
    assert_eq!(g.node(p).op, Op::Input { param: 1 });
    for (i, node) in g.nodes.iter().enumerate() {
        assert!(node.inputs.iter().all(|x| x.0 < n), "node {i}");
    }
    assert_eq!(g.node(g.conds[0].then_outputs[0]).op.name(), "exp");
}

#[test]
fn huge_symbolic_shapes_weigh_without_overflow() {
    // Seven symbols at their nominal size are 2^70 elements: the weights saturate, and the
    // pass still recomputes the cheap chain.
    let g = optimised(
        quote! {
            fn f(x: Tensor<f32, A, B, C, D, E, F, G>, w: Tensor<f32, A, B, C, D, E, F, G>) -> Tensor<f32, A, B, C, D, E, F, G> {
                let h = exp(x * w);
                gradients(reduce_sum(h * h), w)
            }
        },
        &PassConfig::default(),
    );
    assert!(g
        .nodes
        .iter()
        .any(|n| n.name.as_deref() == Some("recompute/h")));
}
