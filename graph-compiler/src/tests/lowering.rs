//! Unit tests of the lowering: reserved names, selection groups and views, literal and shape
//! ranges, the fusion of layer norm and activations, the checks integer division gets.

use super::*;

/// Generated items are visible to the user's tokens in the same block (locals are hygienic,
/// items are not), so every item the expansion defines is either one of the documented
/// names or starts with the prefix a parameter may not have.
#[test]
fn generated_items_carry_the_reserved_prefix() {
    let graphs = [
        quote! {
            fn rows(x: Tensor<f32, N, 64>, g: Tensor<f32, 64>, s: f32) -> Tensor<f32, N, 64> {
                let m = reduce_mean(x, -1, true);
                let d = x - m;
                d / sqrt(reduce_mean(d * d, -1, true) + 1e-5) * g * s
            }
        },
        quote! {
            fn forked(x: Tensor<f32, N, 8>, w: Tensor<f32, 8, 8>, c: Tensor<bool>) -> (Tensor<f32, N, 8>, Tensor<f32>) {
                let h = relu(matmul(x, w));
                let mut t = reduce_sum(h);
                if c { t = reduce_max(exp(h)); }
                (tanh(h) * 2.0, t + reduce_min(h))
            }
        },
    ];
    let documented = ["rows", "forked", "__compiled", "eager", "run", "graph"];
    for g in graphs {
        let code = crate::expand::expand(quote!(), g).to_string();
        let tokens: Vec<&str> = code.split_whitespace().collect();
        for w in tokens.windows(2) {
            if matches!(w[0], "fn" | "static" | "const" | "mod") {
                let name = w[1];
                assert!(
                    documented.contains(&name)
                        || name
                            .to_lowercase()
                            .starts_with(crate::signature::RESERVED_PREFIX)
                        || name == "{",
                    "generated item `{} {name}` is neither documented nor reserved",
                    w[0]
                );
            }
        }
    }
}

#[test]
fn selection_lowers_to_its_own_groups_and_views() {
    let (g, d) = lowered(quote! {
        fn f(x: Tensor<f32, B, 6>, t: usize) -> (Tensor<f32, B, 3>, Tensor<f32, B, 1>) {
            let y = exp(x)[s![.., 0..6;2]] + 1.0;
            (y, expand_dims(x[s![.., t]], -1))
        }
    });
    assert!(!d.has_errors());
    let slices: Vec<&Node> = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::Sel(SelOp::Slice { .. })))
        .collect();
    assert_eq!(slices.len(), 2);
    assert_eq!(slices[0].shape, vec![Dim::Sym("B".into()), Dim::Const(3)]);
    // The run-time index `t` is the second input of the second slice.
    assert_eq!(slices[1].inputs.len(), 2);
    assert!(matches!(
        &slices[1].op,
        Op::Sel(SelOp::Slice { axes, .. }) if axes[1] == SliceSpec::IndexInput(1)
    ));
    let plan = fuse::fuse(&g, &PassConfig::default());
    let kinds: Vec<fuse::GroupKind> = plan.groups.iter().map(|gr| gr.kind).collect();
    // exp is materialised for the slice, which is its own group; `+ 1.0` is a loop after it;
    // expand_dims is a view.
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == fuse::GroupKind::Selection)
            .count(),
        2
    );
    assert!(kinds.contains(&fuse::GroupKind::View));
    let sel = plan
        .groups
        .iter()
        .find(|gr| gr.kind == fuse::GroupKind::Selection)
        .expect("a selection group");
    assert_eq!(sel.nodes.len(), 1);
    assert!(plan.materialised[g.node(sel.root).inputs[0].0]);
}

/// Every way a literal reaches a dtype checks its range (the siblings of `x + 3000000000`),
/// and none of the oversized inputs makes the macro panic.
#[test]
fn out_of_range_literals_are_errors_wherever_they_meet_a_dtype() {
    let bodies = [
        quote!(x + 3000000000),
        quote!(3000000000 - x),
        quote!(maximum(x, 3000000000)),
        quote!(select(x > 0, x, -2147483649)),
        quote!(x * fill([3], 3000000000)),
        quote!(x + constant::<i32>(3000000000)),
        quote!(x + pow(x, 3000000000)),
        quote!(x + (2147483647 + 1)),
        quote!(x + (1 << 40)),
        quote!({
            assert_greater(x, 3000000000, "big");
            x
        }),
        quote!({
            const BIG: i64 = 9000000000;
            x + BIG
        }),
        quote!({
            let mut y = x;
            if reduce_sum(x) > 3000000000 {
                y = y + 1;
            }
            y
        }),
    ];
    for body in bodies {
        let text = body.to_string();
        let item = quote!(fn f(x: Tensor<i32, 3>) -> Tensor<i32, 3> { #body });
        let out = std::panic::catch_unwind(|| crate::expand::expand(quote!(), item).to_string())
            .unwrap_or_else(|_| panic!("`{text}` made the macro panic"));
        assert!(
            out.contains("out of range") || out.contains("not supported"),
            "`{text}` compiled: {}",
            &out[..out.len().min(300)]
        );
    }
    let floats = [
        quote!(x * 1e40),
        quote!(-1e39 + x),
        quote!(x + constant::<f32>(1e300)),
        quote!(x + 1e40f32),
    ];
    for body in floats {
        let text = body.to_string();
        let item = quote!(fn f(x: Tensor<f32, 3>) -> Tensor<f32, 3> { #body });
        let out = std::panic::catch_unwind(|| crate::expand::expand(quote!(), item).to_string())
            .unwrap_or_else(|_| panic!("`{text}` made the macro panic"));
        assert!(out.contains("out of range"), "`{text}` compiled");
    }
    // In range at the extremes, including through a negation.
    for body in [
        quote!(x + -2147483648),
        quote!(x + 2147483647),
        quote!(x * (-2147483647 - 1)),
    ] {
        let text = body.to_string();
        let item = quote!(fn f(x: Tensor<i32, 3>) -> Tensor<i32, 3> { #body });
        let out = crate::expand::expand(quote!(), item).to_string();
        assert!(!out.contains("compile_error"), "`{text}` was refused");
    }
}

/// Sizes and bounds at the edges of their types are errors or work; never a panic.
#[test]
fn oversized_shapes_and_bounds_do_not_panic() {
    let cases = [
        quote!(
            fn f() -> Tensor<f32> {
                reduce_sum(ones([4294967296, 4294967296]))
            }
        ),
        quote!(
            fn f() -> Tensor<f32> {
                reduce_sum(ones([9223372036854775807, 2]))
            }
        ),
        quote!(
            fn f(x: Tensor<f32, 18446744073709551615, 2>) -> Tensor<f32> {
                reduce_sum(x)
            }
        ),
        quote!(
            fn f() -> Tensor<f32> {
                reduce_sum(zeros::<f64>([0, 4294967296, 4294967296]))
            }
        ),
        quote!(
            fn f(x: Tensor<f32, 2>) -> Tensor<f32, 2> {
                let mut y = x;
                for i in 9223372036854775806..=9223372036854775807 {
                    y = y + 1.0;
                }
                y
            }
        ),
        quote!(
            fn f(x: Tensor<f32, 2>) -> Tensor<f32, 2> {
                let mut y = x;
                for i in -9223372036854775807..9223372036854775807 {
                    y = y + 1.0;
                }
                y
            }
        ),
        quote!(
            fn f(x: Tensor<f32, 2>) -> Tensor<f32, 2> {
                reduce_sum(x, -9223372036854775807, true) * x
            }
        ),
        quote!(
            fn f(
                x: Tensor<f32, 1, 8, 8, 1>,
                k: Tensor<f32, 3, 3, 1, 1>,
            ) -> Tensor<f32, 1, 1, 1, 1> {
                conv2d(x, k, 9223372036854775807, VALID)
            }
        ),
    ];
    for item in cases {
        let text = item.to_string();
        let out = std::panic::catch_unwind(|| crate::expand::expand(quote!(), item).to_string());
        assert!(out.is_ok(), "`{text}` made the macro panic");
    }
}

#[test]
fn selection_bounds_at_the_edges_of_i64_do_not_panic() {
    let (g, d) = lowered(quote! {
        fn f(x: Tensor<f32, B, 6>) -> (Tensor<f32, 1, 6>, Tensor<f32, B, 1>, Tensor<f32, 0, 6>) {
            (
                strided_slice(x[s![0..1, ..]], [-9223372036854775807], [9223372036854775807], [-9223372036854775807]),
                x[s![.., 0..9223372036854775807;9223372036854775807]],
                slice(x[s![0..0, ..]], [0, 0], [9223372036854775807, -1]),
            )
        }
    });
    // The second is out of range of 6 and the third does not fit: errors, not panics.
    assert!(d.has_errors());
    assert!(!g.nodes.is_empty());
}

#[test]
fn layer_norm_is_one_loop_over_rows_like_w4() {
    let (g, plan) = plan_of(quote! {
        fn ln(x: Tensor<f32, N, 1024>, gamma: Tensor<f32, 1024>, beta: Tensor<f32, 1024>) -> Tensor<f32, N, 1024> {
            layer_norm(x, gamma, beta, -1, 1e-5)
        }
    });
    let kinds: Vec<&str> = plan.groups.iter().map(|g| g.kind.name()).collect();
    assert_eq!(kinds, vec!["reduce", "reduce", "elementwise"], "as W4");
    let sched = schedule::schedule(&g, &plan);
    assert_eq!(intermediate_slots(&sched), 2, "the two [N, 1] statistics");
    let out = crate::expand::expand(
        quote!(),
        quote! {
            pub fn ln(x: Tensor<f32, N, 1024>, gamma: Tensor<f32, 1024>, beta: Tensor<f32, 1024>) -> Tensor<f32, N, 1024> {
                layer_norm(x, gamma, beta, -1, 1e-5)
            }
        },
    );
    let code = pretty(out);
    assert_eq!(
        code.matches("__grafo_kernel_rows_g0").count(),
        3,
        "one row kernel, defined once and called twice (serial and parallel)"
    );
    assert!(
        !code.contains("__grafo_kernel_g1"),
        "no separate loop for the variance"
    );
}

#[test]
fn activations_and_batch_norm_fuse_into_one_loop() {
    let (g, plan) = plan_of(quote! {
        fn f(x: Tensor<f32, B, 64>, mean: Tensor<f32, 64>, var: Tensor<f32, 64>, beta: Tensor<f32, 64>, gamma: Tensor<f32, 64>) -> Tensor<f32, B, 64> {
            let y = batch_normalization(x, mean, var, beta, gamma, 1e-3);
            clip_by_value(leaky_relu(gelu(y) + softplus(y) + elu(y) + erf(y)), -1.0, 6.0)
        }
    });
    let shapes: Vec<String> = plan
        .groups
        .iter()
        .map(|gr| format!("{} {}", gr.kind.name(), shape_str(&g.node(gr.root).shape)))
        .collect();
    // The per-channel `rsqrt(var + eps) * gamma` is one small loop over [64]; the batch
    // norm over [B, 64] is one loop, materialised because four activations read it (its
    // fused expression costs more than the three ops the recompute rule allows); the
    // activations, leaky_relu and the clip are one more loop.
    assert_eq!(
        shapes,
        vec![
            "elementwise [64]",
            "elementwise [B, 64]",
            "elementwise [B, 64]"
        ],
        "{shapes:?}"
    );
}

#[test]
fn integer_division_gets_a_check_and_float_division_does_not() {
    let (g, _) = lowered(quote! {
        fn f(a: Tensor<i32, 8>, b: Tensor<i32, 8>, x: Tensor<f32, 8>, y: Tensor<f32, 8>) -> (Tensor<i32, 8>, Tensor<f32, 8>) {
            (a / b + a % b, x / y + x % y)
        }
    });
    let checks: Vec<&Node> = g
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                n.op,
                Op::Assert {
                    kind: AssertKind::NonZeroDivisor(_),
                    ..
                }
            )
        })
        .collect();
    assert_eq!(checks.len(), 2, "one check per integer division");
    assert!(checks
        .iter()
        .all(|c| g.node(c.inputs[0]).dtype == DType::I32));
    assert_eq!(g.effects.len(), 2);
}
