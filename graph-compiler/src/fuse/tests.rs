//! Unit tests of fusion: the groups and loop plans of small graphs.

use super::*;
use crate::tests::plan_of;
use quote::quote;

/// The group whose root is the op named `name`, and its loop plan.
fn loop_of<'p>(g: &Graph, plan: &'p Plan, name: &str) -> (&'p Group, &'p LoopPlan) {
    let grp = plan
        .groups
        .iter()
        .find(|grp| g.node(grp.root).op.name() == name)
        .unwrap_or_else(|| panic!("a group rooted at `{name}`"));
    let lp = plan.loops[grp.id]
        .as_ref()
        .unwrap_or_else(|| panic!("a loop plan for `{name}`"));
    (grp, lp)
}

/// Each leaf named (`p0` for the first parameter, else its op), with its class.
fn leaf_names(g: &Graph, lp: &LoopPlan) -> Vec<(String, LeafClass)> {
    lp.leaves
        .iter()
        .map(|&(l, c)| match g.node(l).op {
            Op::Input { param } => (format!("p{param}"), c),
            ref op => (op.name(), c),
        })
        .collect()
}

fn names(list: &[(&str, LeafClass)]) -> Vec<(String, LeafClass)> {
    list.iter().map(|&(n, c)| (n.to_string(), c)).collect()
}

/// The op names of a plan's per-element ops.
fn op_names(g: &Graph, lp: &LoopPlan) -> Vec<String> {
    lp.ops.iter().map(|&o| g.node(o).op.name()).collect()
}

#[test]
fn the_plan_gives_each_loop_its_leaf_classes_split_and_flatness() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, N, 8>, gamma: Tensor<f32, 8>, s: Tensor<f32>, c: Tensor<f32, 1, 1>)
            -> (Tensor<f32, N, 1>, Tensor<f32, N, 8>, Tensor<f32>, Tensor<f32, N, 8>) {
            let m = reduce_max(x, -1, true);
            let y = (x - m) * gamma + c;
            let t = reduce_sum(x * s);
            let z = exp(x) * s;
            (m, y, t, z)
        }
    });
    assert_eq!(plan.loops.len(), plan.groups.len());
    let n8 = vec![Dim::Sym("N".into()), Dim::Const(8)];

    // A row reduction over the last axis: rows of 8, its input read row by row.
    let (grp, lp) = loop_of(&g, &plan, "reduce_max");
    assert_eq!(lp.kind, LoopKind::RowReduction);
    assert_eq!(
        (lp.shape.clone(), lp.split, lp.flat),
        (n8.clone(), 1, false)
    );
    assert_eq!(leaf_names(&g, lp), names(&[("p0", LeafClass::Full)]));
    assert_eq!(lp.element, g.node(grp.root).inputs[0]);
    assert!(lp.ops.is_empty(), "no producer: {:?}", lp.ops);

    // An elementwise loop with broadcast leaves: by rows, each leaf read its own way;
    // `[1, 1]` against `[N, 8]` is one value for the whole loop.
    let (grp, lp) = loop_of(&g, &plan, "add");
    assert_eq!(lp.kind, LoopKind::Elementwise);
    assert_eq!(
        (lp.shape.clone(), lp.split, lp.flat),
        (n8.clone(), 1, false)
    );
    let mut leaves = leaf_names(&g, lp);
    leaves.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        leaves,
        names(&[
            ("p0", LeafClass::Full),
            ("p1", LeafClass::RowVec),
            ("p3", LeafClass::Scalar),
            ("reduce_max", LeafClass::RowScalar),
        ])
    );
    assert_eq!(op_names(&g, lp), vec!["sub", "mul", "add"]);
    assert_eq!(
        (lp.element, lp.ops.last().copied()),
        (grp.root, Some(grp.root))
    );

    // A whole reduction of a fused producer reading only full and rank-0 leaves: one flat loop.
    let (grp, lp) = loop_of(&g, &plan, "reduce_sum");
    assert_eq!(lp.kind, LoopKind::WholeReduction);
    assert_eq!((lp.shape.clone(), lp.split, lp.flat), (n8.clone(), 0, true));
    assert_eq!(
        leaf_names(&g, lp),
        names(&[("p0", LeafClass::Full), ("p2", LeafClass::Scalar)])
    );
    assert_eq!(Some(lp.element), grp.producer);
    assert_eq!(op_names(&g, lp), vec!["mul"]);

    // An elementwise loop whose leaves are full or rank 0: flat.
    let (_, lp) = loop_of(&g, &plan, "mul");
    assert_eq!(lp.kind, LoopKind::Elementwise);
    assert_eq!((lp.shape.clone(), lp.split, lp.flat), (n8, 1, true));
    assert_eq!(
        leaf_names(&g, lp),
        names(&[("p0", LeafClass::Full), ("p2", LeafClass::Scalar)])
    );
    assert!(plan
        .loops
        .iter()
        .flatten()
        .all(|lp| lp.reads_output.is_none()));
}

#[test]
fn an_epilogue_plan_reads_the_kernel_output_and_its_other_leaves_by_rows() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, B, 16>, w: Tensor<f32, 16, 4>, b: Tensor<f32, 4>) -> Tensor<f32, B, 4> {
            relu(matmul(x, w) + b)
        }
    });
    assert_eq!(plan.groups.len(), 1);
    let grp = &plan.groups[0];
    let lp = plan.loops[0].as_ref().expect("an epilogue plan");
    assert_eq!(lp.kind, LoopKind::Epilogue);
    assert_eq!(lp.reads_output, grp.anchor);
    assert_eq!((lp.split, lp.flat), (1, false));
    assert_eq!(leaf_names(&g, lp), names(&[("p2", LeafClass::RowVec)]));
    assert_eq!(op_names(&g, lp), vec!["add", "relu"]);
}

#[test]
fn groups_without_a_fused_loop_have_no_loop_plan() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, 4, 6>) -> (Tensor<f32, 6>, Tensor<f32, 6, 4>) {
            (reduce_sum(x, 0), transpose(x))
        }
    });
    for grp in &plan.groups {
        assert!(
            plan.loops[grp.id].is_none(),
            "{} ({}) has a loop plan",
            g.node(grp.root).op.name(),
            grp.kind.name()
        );
    }
    assert_eq!(plan.groups.len(), 2);
}
