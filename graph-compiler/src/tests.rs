//! Unit tests of the pipeline on tiny graphs: each pass asserted on the graph after it, and snapshots of the emitted code.

use crate::diag::Diagnostics;
use crate::ir::*;
use crate::passes::{self, PassConfig};
use crate::signature::parse_signature;
use crate::{fuse, lower, schedule};
use quote::quote;

/// Parses and lowers a `#[graph]` function given as tokens.
fn lowered(item: proc_macro2::TokenStream) -> (Graph, Diagnostics) {
    let func: syn::ItemFn = syn::parse2(item).expect("a function");
    let mut diag = Diagnostics::default();
    let sig = parse_signature(&func.sig, &mut diag);
    let l = lower::lower(
        &sig,
        &func.block,
        func.sig.ident.span().into(),
        &mut diag,
        &lower::Callees::default(),
    );
    (l.graph, diag)
}

fn live_ops(g: &Graph) -> Vec<String> {
    let live = passes::dce::live_nodes(g);
    g.nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| live[*i])
        .map(|(_, n)| n.op.name())
        .collect()
}

#[test]
fn fold_turns_constant_add_into_one_constant() {
    let (mut g, mut d) = lowered(quote! {
        fn suma() -> Tensor<i32> { constant(5) + constant(3) }
    });
    passes::fold::run(&mut g, &mut d);
    assert!(!d.has_errors());
    let out = g.outputs[0];
    assert_eq!(g.const_value(out), Some(Scalar::Int(8)));
    assert_eq!(live_ops(&g), vec!["constant"]);
}

#[test]
fn fold_removes_the_dead_arm_of_a_constant_cond() {
    let (mut g, mut d) = lowered(quote! {
        fn f(x: Tensor<f32, 4>) -> Tensor<f32, 4> {
            let mut y = x;
            if constant(1.0) < constant(2.0) { y = exp(x); } else { y = log(x); }
            y
        }
    });
    assert_eq!(g.conds.len(), 1);
    passes::fold::run(&mut g, &mut d);
    assert!(g.conds[0].removed);
    let ops = live_ops(&g);
    assert!(
        ops.contains(&"exp".to_string()) && !ops.contains(&"log".to_string()),
        "{ops:?}"
    );
}

#[test]
fn fold_decides_constant_asserts_and_reports_a_failing_one() {
    let (mut g, mut d) = lowered(quote! {
        fn f(x: Tensor<f32>) -> Tensor<f32> {
            assert_greater(constant(1.0), constant(0.0), "fine");
            assert_greater(constant(0.0), constant(1.0), "must fail");
            x
        }
    });
    passes::fold::run(&mut g, &mut d);
    assert!(g.effects.is_empty());
    let e = d
        .into_error()
        .expect("the failing assert is a compile error");
    assert!(e.to_string().contains("must fail"), "{e}");
}

#[test]
fn cse_merges_duplicate_expressions() {
    let (mut g, _) = lowered(quote! {
        fn f(x: Tensor<f32, 8>) -> Tensor<f32, 8> { exp(x) + exp(x) }
    });
    passes::cse::run(&mut g);
    let add = g.node(g.outputs[0]).clone();
    assert_eq!(add.inputs[0], add.inputs[1]);
    assert_eq!(live_ops(&g).iter().filter(|o| *o == "exp").count(), 1);
}

/// `f32::NAN` twice is one constant; `-f32::NAN` (another sign bit) and `f64::NAN` (another
/// dtype) stay apart, and the emitter spells the negative NaN by its bits, not as `f32::NAN`.
#[test]
fn dtype_constants_are_typed_and_merged_by_their_bits() {
    let (mut g, d) = lowered(quote! {
        fn f(x: Tensor<f32, 8>) -> (Tensor<f32, 8>, Tensor<f32, 8>, Tensor<f32, 8>, Tensor<f64>) {
            (x + f32::NAN, x * f32::NAN, x - -f32::NAN, constant(std::f64::NAN))
        }
    });
    assert!(!d.has_errors());
    passes::cse::run(&mut g);
    let operand = |k: usize| g.node(g.outputs[k]).inputs[1];
    assert_eq!(operand(0), operand(1));
    assert_ne!(operand(0), operand(2));
    let nan = |id: NodeId| match g.const_value(id) {
        Some(Scalar::Float(v)) => v,
        other => panic!("not a float constant: {other:?}"),
    };
    assert_eq!(g.node(operand(0)).dtype, DType::F32);
    assert_eq!(nan(operand(0)).to_bits(), f64::NAN.to_bits());
    assert_eq!(nan(operand(2)).to_bits(), (-f64::NAN).to_bits());
    assert_eq!(g.node(g.outputs[3]).dtype, DType::F64);
    let spelled = crate::emit::compiled::literal(Scalar::Float(-f64::NAN), DType::F32);
    let bits = (-f32::NAN).to_bits();
    assert_eq!(
        spelled.to_string(),
        quote!(f32::from_bits(#bits)).to_string()
    );
    let plain = crate::emit::compiled::literal(Scalar::Float(f64::NAN), DType::F32);
    assert_eq!(plain.to_string(), quote!(f32::NAN).to_string());
}

#[test]
fn dce_drops_unused_values() {
    let (g, _) = lowered(quote! {
        fn f(x: Tensor<f32, 8>) -> Tensor<f32, 8> { let unused = tanh(x) * 3.0; x + 1.0 }
    });
    let ops = live_ops(&g);
    assert!(!ops.contains(&"tanh".to_string()), "{ops:?}");
}

#[test]
fn simplify_removes_identities_and_cancelling_transposes() {
    let (mut g, _) = lowered(quote! {
        fn f(x: Tensor<f32, 2, 3>) -> Tensor<f32, 2, 3> { transpose(transpose(x * 1.0 - 0.0 + (-0.0))) }
    });
    passes::simplify::run(&mut g);
    assert_eq!(live_ops(&g), vec!["input"]);
}

#[test]
fn simplify_keeps_float_additions_of_zero_that_change_negative_zero() {
    // `-0.0 + 0.0` is `+0.0` and `-0.0 - (-0.0)` is `+0.0`: neither is the identity.
    let (mut g, _) = lowered(quote! {
        fn f(x: Tensor<f32, 3>) -> (Tensor<f32, 3>, Tensor<f32, 3>, Tensor<f32, 3>) { (x + 0.0, 0.0 + x, x - (-0.0)) }
    });
    passes::simplify::run(&mut g);
    let ops = live_ops(&g);
    assert_eq!(ops.iter().filter(|o| *o == "add").count(), 2, "{ops:?}");
    assert_eq!(ops.iter().filter(|o| *o == "sub").count(), 1, "{ops:?}");
    // Integers have one zero: `n + 0` is `n`.
    let (mut g, _) = lowered(quote! {
        fn f(n: Tensor<i32, 3>) -> Tensor<i32, 3> { n + 0 - 0 }
    });
    passes::simplify::run(&mut g);
    assert_eq!(live_ops(&g), vec!["input"]);
}

#[test]
fn simplify_divides_by_a_power_of_two_only_when_its_reciprocal_is_exact() {
    let (mut g, _) = lowered(quote! {
        fn f(x: Tensor<f32, 3>) -> (Tensor<f32, 3>, Tensor<f32, 3>) { (x / 4.0, x / 1.4e-45) }
    });
    passes::simplify::run(&mut g);
    let ops = live_ops(&g);
    // 2^-149's reciprocal overflows f32: that division stays.
    assert_eq!(
        (
            ops.iter().filter(|o| *o == "mul").count(),
            ops.iter().filter(|o| *o == "div").count()
        ),
        (1, 1),
        "{ops:?}"
    );
}

#[test]
fn simplify_keeps_float_times_zero_but_folds_integer_times_zero() {
    let (mut g, _) = lowered(quote! {
        fn f(x: Tensor<f32>, n: Tensor<i32>) -> (Tensor<f32>, Tensor<i32>) { (x * 0.0, n * 0) }
    });
    passes::simplify::run(&mut g);
    assert_eq!(g.node(g.outputs[0]).op, Op::Binary(BinaryOp::Mul));
    assert_eq!(g.const_value(g.outputs[1]), Some(Scalar::Int(0)));
}

/// Lowers, optimises and fuses a `#[graph]` function given as tokens.
pub(crate) fn plan_of(item: proc_macro2::TokenStream) -> (Graph, fuse::Plan) {
    let (mut g, mut d) = lowered(item);
    passes::optimise(&mut g, &PassConfig::default(), &mut d);
    assert!(!d.has_errors());
    let plan = fuse::fuse(&g, &PassConfig::default());
    (g, plan)
}

#[test]
fn fusion_makes_gelu_one_loop() {
    let (g, plan) = plan_of(quote! {
        fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
            0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        }
    });
    assert_eq!(plan.groups.len(), 1);
    let ops: Vec<String> = plan.groups[0]
        .nodes
        .iter()
        .map(|&n| g.node(n).op.name())
        .collect();
    assert!(
        ops.contains(&"tanh".to_string()) && ops.len() >= 8,
        "{ops:?}"
    );
}

#[test]
fn fusion_puts_bias_and_relu_in_the_matmul_epilogue() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, B, 784>, w: Tensor<f32, 784, 512>, b: Tensor<f32, 512>) -> Tensor<f32, B, 512> {
            relu(matmul(x, w) + b)
        }
    });
    assert_eq!(plan.groups.len(), 1);
    assert_eq!(plan.groups[0].kind, fuse::GroupKind::MatMul);
    let ops: Vec<String> = plan.groups[0]
        .nodes
        .iter()
        .map(|&n| g.node(n).op.name())
        .collect();
    assert_eq!(ops, vec!["matmul", "add", "relu"]);
}

#[test]
fn fusion_reads_the_producer_inside_the_reduction() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, N>) -> Tensor<f32> { reduce_sum(square(x)) }
    });
    assert_eq!(plan.groups.len(), 1);
    assert_eq!(plan.groups[0].kind, fuse::GroupKind::Reduce);
    let ops: Vec<String> = plan.groups[0]
        .nodes
        .iter()
        .map(|&n| g.node(n).op.name())
        .collect();
    assert_eq!(ops, vec!["square", "reduce_sum"]);
}

#[test]
fn layernorm_takes_three_passes_and_two_row_buffers() {
    let (g, plan) = plan_of(quote! {
        fn ln(x: Tensor<f32, N, 1024>, gamma: Tensor<f32, 1024>, beta: Tensor<f32, 1024>) -> Tensor<f32, N, 1024> {
            let mean = reduce_mean(x, -1, true);
            let d = x - mean;
            let var = reduce_mean(d * d, -1, true);
            d / sqrt(var + 1e-5) * gamma + beta
        }
    });
    let kinds: Vec<&str> = plan.groups.iter().map(|g| g.kind.name()).collect();
    assert_eq!(kinds, vec!["reduce", "reduce", "elementwise"]);
    let sched = schedule::schedule(&g, &plan);
    assert_eq!(
        intermediate_slots(&sched),
        2,
        "the two [N, 1] statistics: {:?}",
        sched.slots
    );
}

#[test]
fn buffers_with_disjoint_lifetimes_share_a_slot() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, 64, 64>) -> Tensor<f32, 64, 64> {
            let a = softmax(x, -1);
            let b = softmax(a, -1);
            let c = softmax(b, -1);
            softmax(c, -1)
        }
    });
    let sched = schedule::schedule(&g, &plan);
    // a and c never live at the same time, so two slots hold the three intermediates.
    assert_eq!(intermediate_slots(&sched), 2, "{:?}", sched.slots);
}

/// Slots of intermediates (results have slots of their own).
fn intermediate_slots(sched: &schedule::Schedule) -> usize {
    sched
        .slots
        .iter()
        .filter(|(_, vs)| !vs.iter().any(|v| sched.fresh[v.0]))
        .count()
}

fn pretty(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as Rust items");
    prettyplease::unparse(&file)
}

#[test]
fn snapshot_w1_gelu() {
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
                0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
            }
        },
    );
    insta::assert_snapshot!("w1_gelu", pretty(out));
}

#[test]
fn snapshot_w3_convnet() {
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn convnet(
                x: Tensor<f32, B, 512, 512, 3>,
                k0: Tensor<f32, 3, 3, 3, 16>, b0: Tensor<f32, 16>,
                k1: Tensor<f32, 3, 3, 16, 16>, b1: Tensor<f32, 16>,
                limit: Tensor<f32>,
            ) -> Tensor<f32, B, 512, 512, 16> {
                let mut y = relu(conv2d(x, k0, 1, SAME) + b0);
                if norm(y) < limit {
                    y = relu(conv2d(y, k1, 1, SAME) + b1);
                }
                y
            }
        },
    );
    insta::assert_snapshot!("w3_convnet", pretty(out));
}

#[test]
fn an_elementwise_group_writes_in_place_over_a_dead_input() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, 64, 64>) -> Tensor<f32, 64, 64> {
            let a = softmax(x, -1);
            let b = exp(a) + 1.0;
            softmax(b, -1)
        }
    });
    let sched = schedule::schedule(&g, &plan);
    let ew = plan
        .groups
        .iter()
        .find(|gr| gr.kind == fuse::GroupKind::Elementwise)
        .expect("one loop");
    let a = g.node(ew.root).inputs[0];
    let dead = sched.in_place[ew.root.0].expect("exp(a) + 1 overwrites a");
    assert_eq!(g.node(dead).op.name(), "softmax");
    assert_eq!(sched.slot[ew.root.0], sched.slot[dead.0]);
    let _ = a;
}

#[test]
fn fold_decides_a_cond_on_a_reduction_of_a_constant_fill() {
    let (mut g, mut d) = lowered(quote! {
        fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
            let mut y = x;
            if reduce_sum(fill([4], 1.0)) < 3.0 { y = y + 1000.0; }
            y
        }
    });
    passes::fold::run(&mut g, &mut d);
    assert!(g.conds[0].removed);
    assert_eq!(live_ops(&g), vec!["input"]);
}

#[test]
fn independent_fetches_fork_after_their_shared_prefix() {
    let (g, plan) = plan_of(quote! {
        fn two_heads(x: Tensor<f32, B, 64>, w1: Tensor<f32, 64, 64>, w2: Tensor<f32, 64, 64>) -> (Tensor<f32, B, 64>, Tensor<f32, B, 64>) {
            let h = relu(x * 2.0 - 0.5);
            let f = tanh(matmul(h, w1));
            let g = softmax(matmul(h, w2) + h, -1);
            (f, g)
        }
    });
    let sched = schedule::schedule(&g, &plan);
    let fork = sched.fork.expect("the two heads are independent");
    let kinds = |gs: &[usize]| {
        gs.iter()
            .map(|&i| plan.groups[i].kind.name())
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(&fork.prefix), vec!["elementwise"]);
    assert_eq!(kinds(&fork.branches[0]), vec!["matmul"]);
    assert_eq!(kinds(&fork.branches[1]), vec!["matmul", "softmax"]);
    assert_eq!(fork.outputs, [vec![g.outputs[0]], vec![g.outputs[1]]]);
}

#[test]
fn a_value_a_branch_reads_is_not_freed_before_the_fork() {
    // `a` (branch 1 only) comes before `p` (both results need it) in group order, and both
    // read `h`: the branches run after the whole prefix, so `h` must outlive `p`'s group
    // (its free and any in-place takeover wait for the branches).
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, B, 64>, w: Tensor<f32, 64, 64>, v: Tensor<f32, 64, 64>) -> (Tensor<f32>, Tensor<f32, B, 64>) {
            let h = relu(x * 2.0 - 0.5);
            let a = tanh(matmul(h, w));
            let p = exp(matmul(h, v));
            (reduce_sum(p), softmax(a, -1) + p)
        }
    });
    let sched = schedule::schedule(&g, &plan);
    let fork = sched.fork.expect("the two results fork after the prefix");
    let reads: Vec<Vec<NodeId>> = plan
        .groups
        .iter()
        .map(|gr| schedule::group_reads(&g, &plan, gr))
        .collect();
    let branch_reads: Vec<NodeId> = fork
        .branches
        .iter()
        .flatten()
        .flat_map(|&b| reads[b].iter().copied())
        .collect();
    assert!(
        fork.prefix
            .iter()
            .any(|&p| fork.branches[1].iter().any(|&b| b < p)),
        "a branch group comes before a prefix group in group order"
    );
    for &p in &fork.prefix {
        for f in &sched.frees_after[p] {
            assert!(
                !branch_reads.contains(f),
                "{f:?} freed in the prefix, read by a branch"
            );
        }
        let root = plan.groups[p].root;
        if let Some(l) = sched.in_place[root.0] {
            assert!(
                !branch_reads.contains(&l),
                "{l:?} overwritten in the prefix"
            );
        }
    }
}

#[test]
fn fetches_of_one_chain_do_not_fork() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>) { let e = exp(x); (e, e + 1.0) }
    });
    assert!(schedule::schedule(&g, &plan).fork.is_none());
}

#[test]
fn snapshot_w4_layernorm_is_one_loop_over_rows() {
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn layernorm(x: Tensor<f32, N, 1024>, gamma: Tensor<f32, 1024>, beta: Tensor<f32, 1024>) -> Tensor<f32, N, 1024> {
                let mean = reduce_mean(x, -1, true);
                let d = x - mean;
                let var = reduce_mean(d * d, -1, true);
                d / sqrt(var + 1e-5) * gamma + beta
            }
        },
    );
    let code = pretty(out);
    assert_eq!(
        code.matches("__grafo_kernel_rows_g0").count(),
        3,
        "one kernel, defined once and called twice (serial and parallel)"
    );
    assert!(
        !code.contains("__grafo_kernel_g1"),
        "no separate loop for the variance"
    );
    insta::assert_snapshot!("w4_layernorm", code);
}

#[test]
fn snapshot_in_place_adam_step() {
    // The three new values are written into the caller's arrays by their own loops, which
    // run last; the gradient's matmul keeps no epilogue over the parameter.
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn step(
                x: Tensor<f32, B, 4>, labels: Tensor<i32, B>,
                w: &mut Tensor<f32, 4, 3>, m: &mut Tensor<f32, 4, 3>, v: &mut Tensor<f32, 4, 3>,
                t: f32,
            ) -> Tensor<f32> {
                let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, matmul(x, w)));
                let gw = gradients(loss, w);
                (w, m, v) = apply_adam(w, m, v, pow(0.9, t), pow(0.999, t), 0.001, 0.9, 0.999, 1e-8, gw);
                loss
            }
        },
    );
    insta::assert_snapshot!("in_place_adam_step", pretty(out));
}

#[test]
fn an_in_place_parameter_records_its_final_value_which_dce_keeps() {
    let (mut g, mut d) = lowered(quote! {
        fn f(w: &mut Tensor<f32, 4>, keep: &mut Tensor<f32, 4>, x: Tensor<f32, 4>) -> Tensor<f32, 4> {
            w = w + x;
            let keep = keep * 2.0;
            w = exp(w);
            x * keep
        }
    });
    assert!(!d.has_errors());
    // `keep` is shadowed, never reassigned: only `w` is written, with its last value.
    let &[(0, wb)] = &g.writebacks[..] else {
        panic!("one writeback: {:?}", g.writebacks)
    };
    assert_eq!(g.node(wb).op, Op::Unary(UnaryOp::Exp));
    passes::optimise(&mut g, &PassConfig::default(), &mut d);
    assert!(passes::dce::live_nodes(&g)[g.writebacks[0].1 .0]);
    assert_eq!(
        live_ops(&g),
        ["input", "input", "input", "add", "constant", "mul", "exp", "mul"]
    );
}

#[test]
fn a_parameters_new_value_is_written_in_place_only_by_the_last_reader() {
    // Read by nothing after: its loop writes the parameter, and runs last.
    let (g, plan) = plan_of(quote! {
        fn f(w: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32> {
            w = w - x;
            reduce_sum(x * x)
        }
    });
    let wb = g.writebacks[0].1;
    assert_eq!(plan.into_param[wb.0], Some(0));
    assert_eq!(plan.groups.last().map(|gr| gr.root), Some(wb));
    let sched = schedule::schedule(&g, &plan);
    assert_eq!(
        sched.slot[wb.0], None,
        "no buffer: the parameter is the buffer"
    );
    // Read after the update, returned, or with the old value returned: the copy path.
    for item in [
        quote!(
            fn f(w: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32> {
                w = w - x;
                reduce_sum(w)
            }
        ),
        quote!(
            fn f(w: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32, 8> {
                w = w - x;
                w
            }
        ),
        quote!(
            fn f(w: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32, 8> {
                let o = w;
                w = w - x;
                o
            }
        ),
    ] {
        let (g, plan) = plan_of(item);
        let wb = g.writebacks[0].1;
        assert_eq!(plan.into_param[wb.0], None);
        let sched = schedule::schedule(&g, &plan);
        assert_eq!(
            sched.last_use[wb.0],
            Some(plan.groups.len()),
            "kept to the end"
        );
    }
    // Two parameters' loops: `w`'s reads `m`'s new value, never `m`'s old one.
    let (g, plan) = plan_of(quote! {
        fn f(w: &mut Tensor<f32, 8>, m: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32> {
            m = m * 0.9 + x;
            w = w - m;
            reduce_sum(x)
        }
    });
    assert!(g
        .writebacks
        .iter()
        .all(|&(p, w)| plan.into_param[w.0] == Some(p)));
    let (g, plan) = plan_of(quote! {
        fn f(w: &mut Tensor<f32, 8>, m: &mut Tensor<f32, 8>, x: Tensor<f32, 8>) -> Tensor<f32> {
            let old = m;
            m = m * 0.9 + x;
            w = w - old;
            reduce_sum(x)
        }
    });
    let into: Vec<Option<usize>> = g
        .writebacks
        .iter()
        .map(|&(_, w)| plan.into_param[w.0])
        .collect();
    assert_eq!(
        into,
        [Some(0), None],
        "`m` is read by `w`'s loop, so it is copied"
    );
}

#[test]
fn an_unrolled_loop_emits_each_kernel_once_and_drivers_over_dyn() {
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn steps(
                x: Tensor<f32, B, 8, I>,
                h0: Tensor<f32, B, H>,
                w: Tensor<f32, I, H>,
                u: Tensor<f32, H, H>,
                b: Tensor<f32, H>,
            ) -> Tensor<f32, B, H> {
                let mut h = h0;
                for t in 0..8 {
                    h = tanh(matmul(x[s![.., t, ..]], w) + matmul(h, u) + b) * h;
                }
                h
            }
        },
    )
    .to_string();
    let start = out.find("fn __compiled").expect("a compiled body");
    let end = out[start..].find("fn eager").expect("an eager body") + start;
    let compiled = &out[start..end];
    // The eight steps' epilogues (add, add, tanh, mul) are one kernel, called eight times.
    assert_eq!(compiled.matches("multiversion").count(), 1, "{compiled}");
    let name_at = compiled.find("fn __grafo_kernel_").expect("a kernel") + 3;
    let name: String = compiled[name_at..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    assert_eq!(
        compiled.matches(&format!("{name} (")).count(),
        9,
        "{compiled}"
    );
    // Every epilogue closure reaches the GEMM's driver as a `&dyn Fn`, one type for all.
    assert_eq!(
        compiled
            .matches("as & (dyn Fn (usize , usize , & mut [f32])")
            .count(),
        8,
        "{compiled}"
    );
}

mod lowering;
