//! The five benchmark workloads (W1–W5 of WORKLOADS.md) end to end: compiled == eager ==
//! a naive f64 reference, plus assertions on `NAME::graph()` that the expected fusion happened.

mod refs;
#[path = "common/workloads.rs"]
mod workloads;

use grafo::prelude::*;
use grafo::{Dim, GraphDef};
use refs::*;
use workloads::*;
// W1 is named `gelu`, like the op the prelude exports: the explicit import wins over both globs.
use workloads::gelu;

// ----- W1: gelu -------------------------------------------------------------------------------

fn check_gelu(x: &Array1<f32>) {
    let want = map1(&to_f64(x), ref_gelu);
    let a = gelu(x).unwrap();
    let b = gelu::eager(x).unwrap();
    assert_close(&format!("w1 compiled n={}", x.len()), &a, &want);
    assert_close(&format!("w1 eager n={}", x.len()), &b, &want);
}

#[test]
fn w1_gelu_sizes() {
    for (seed, n) in [0usize, 1, 7, 1023, 4097].into_iter().enumerate() {
        let x = rand_arr(seed as u64, grafo::ndarray::Ix1(n), -6.0, 6.0);
        check_gelu(&x);
    }
}

#[test]
fn w1_gelu_real_size() {
    let n = 4194304;
    let x = rand_arr(42, grafo::ndarray::Ix1(n), -8.0, 8.0);
    check_gelu(&x);
}

#[test]
fn w1_gelu_non_finite() {
    let x = arr1(&[
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e30,
        -1e30,
        50.0,
        -50.0,
        1e-30,
    ]);
    let want = map1(&to_f64(&x), ref_gelu);
    let a = gelu(&x).unwrap();
    let b = gelu::eager(&x).unwrap();
    // Elements with a finite reference must match; NaN must stay NaN; +inf stays +inf.
    assert!(
        a[0].is_nan() && b[0].is_nan(),
        "gelu(NaN): {} {}",
        a[0],
        b[0]
    );
    assert_eq!(a[1], f32::INFINITY, "compiled gelu(+inf)");
    assert_eq!(b[1], f32::INFINITY, "eager gelu(+inf)");
    // -inf: 0.5 * -inf * (1 + tanh(-inf)) = -inf * 0 = NaN in IEEE arithmetic (as in TF/NumPy).
    assert!(
        a[2].is_nan() && b[2].is_nan(),
        "gelu(-inf): {} {}",
        a[2],
        b[2]
    );
    for i in 3..x.len() {
        assert!(
            close(a[i] as f64, want[i]),
            "compiled gelu({}) = {} want {}",
            x[i],
            a[i],
            want[i]
        );
        assert!(
            close(b[i] as f64, want[i]),
            "eager gelu({}) = {} want {}",
            x[i],
            b[i],
            want[i]
        );
    }
}

fn close(g: f64, w: f64) -> bool {
    (g - w).abs() <= ATOL + RTOL * w.abs()
}

#[test]
fn w1_gelu_is_one_elementwise_group() {
    let g = gelu::graph();
    let ew = g.groups_of("elementwise");
    assert_eq!(ew.len(), 1, "{:#?}", g.groups);
    // Every arithmetic node that runs is in that one group.
    let ops = g.group_ops(ew[0].id);
    for op in ["mul", "add", "tanh"] {
        assert!(ops.contains(&op), "group ops {ops:?} lack {op}");
    }
    for n in &g.nodes {
        if n.group.is_some() && !matches!(n.op.as_str(), "input" | "constant") {
            assert_eq!(
                n.group,
                Some(ew[0].id),
                "node {} ({}) outside the fused group; groups {:#?}",
                n.name,
                n.op,
                g.groups
            );
        }
    }
    // No group other than the elementwise loop does work on the data.
    let working: Vec<_> = g
        .groups
        .iter()
        .filter(|gr| gr.kind != "view" && gr.kind != "scalar")
        .collect();
    assert_eq!(working.len(), 1, "{:#?}", g.groups);
}

// ----- W2: mlp --------------------------------------------------------------------------------

fn mlp_ref(
    x: &ArrayD<f64>,
    w1: &ArrayD<f64>,
    b1: &ArrayD<f64>,
    w2: &ArrayD<f64>,
    b2: &ArrayD<f64>,
) -> ArrayD<f64> {
    let h = zip2(&ref_matmul(x, w1), b1, |a, b| ref_relu(a + b));
    let o = zip2(&ref_matmul(&h, w2), b2, |a, b| a + b);
    ref_softmax(&o, 1, false)
}

#[test]
fn w2_mlp_batches() {
    let w1 = rand_arr(11, grafo::ndarray::Ix2(784, 512), -0.05, 0.05);
    let b1 = rand_arr(12, grafo::ndarray::Ix1(512), -0.1, 0.1);
    let w2 = rand_arr(13, grafo::ndarray::Ix2(512, 10), -0.2, 0.2);
    let b2 = rand_arr(14, grafo::ndarray::Ix1(10), -0.1, 0.1);
    for b in [1usize, 7, 256] {
        let x = rand_arr(b as u64, grafo::ndarray::Ix2(b, 784), 0.0, 1.0);
        let want = mlp_ref(
            &to_f64(&x),
            &to_f64(&w1),
            &to_f64(&b1),
            &to_f64(&w2),
            &to_f64(&b2),
        );
        let a = mlp(&x, &w1, &b1, &w2, &b2).unwrap();
        let e = mlp::eager(&x, &w1, &b1, &w2, &b2).unwrap();
        assert_eq!(a.shape(), &[b, 10]);
        assert_close(&format!("w2 compiled B={b}"), &a, &want);
        assert_close(&format!("w2 eager B={b}"), &e, &want);
        let mut s = Session::default();
        let r = mlp::run(&mut s, &x, &w1, &b1, &w2, &b2).unwrap();
        assert_close(&format!("w2 session B={b}"), &r, &want);
    }
}

#[test]
fn w2_first_matmul_has_bias_relu_epilogue() {
    let g = mlp::graph();
    let mm = g.groups_of("matmul");
    assert_eq!(mm.len(), 2, "{:#?}", g.groups);
    // The first matmul in schedule order is x @ w1.
    let first = g
        .schedule
        .iter()
        .map(|&i| &g.groups[i])
        .find(|gr| gr.kind == "matmul")
        .expect("a matmul group in the schedule");
    let ops = g.group_ops(first.id);
    assert_eq!(ops[0], "matmul", "{ops:?}");
    assert!(
        ops.contains(&"add"),
        "first matmul group lacks the bias add: {ops:?}"
    );
    assert!(
        ops.contains(&"relu"),
        "first matmul group lacks relu: {ops:?}"
    );
    // Its matmul reads x directly.
    let mm_node = &g.nodes[first.nodes[0]];
    let x_in = g
        .inputs
        .iter()
        .find(|i| i.name == "x")
        .and_then(|i| i.node)
        .unwrap();
    assert!(
        mm_node.inputs.contains(&x_in),
        "first matmul does not read x: {mm_node:?}"
    );
    assert_eq!(
        g.nodes[first.output].shape,
        vec![Dim::Symbol("B".into()), Dim::Static(512)]
    );
}

// ----- W3: seed_convnet -----------------------------------------------------------------------

/// docs/LANGUAGE.md's first example (with relu), at a static size.
#[graph]
fn w3_convnet_relu(
    x: Tensor<f32, B, 32, 32, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, 32, 32, 16> {
    let mut y = relu(conv2d(x, k0, 1, SAME) + b0);
    if norm(y) < limit {
        y = relu(conv2d(y, k1, 1, SAME) + b1);
    }
    y
}

struct ConvParams {
    k0: Array4<f32>,
    b0: Array1<f32>,
    k1: Array4<f32>,
    b1: Array1<f32>,
}

fn conv_params() -> ConvParams {
    ConvParams {
        k0: rand_arr(21, grafo::ndarray::Ix4(3, 3, 3, 16), -0.3, 0.3),
        b0: rand_arr(22, grafo::ndarray::Ix1(16), -0.1, 0.1),
        k1: rand_arr(23, grafo::ndarray::Ix4(3, 3, 16, 16), -0.2, 0.2),
        b1: rand_arr(24, grafo::ndarray::Ix1(16), -0.1, 0.1),
    }
}

fn convnet_ref(x: &ArrayD<f64>, p: &ConvParams, limit: f64, act: bool) -> (ArrayD<f64>, bool) {
    let f = |v: f64| if act { ref_relu(v) } else { v };
    let y = zip2(
        &ref_conv2d(x, &to_f64(&p.k0), 1, true),
        &to_f64(&p.b0),
        |a, b| f(a + b),
    );
    if ref_norm(&y) < limit {
        (
            zip2(
                &ref_conv2d(&y, &to_f64(&p.k1), 1, true),
                &to_f64(&p.b1),
                |a, b| f(a + b),
            ),
            true,
        )
    } else {
        (y, false)
    }
}

#[test]
fn w3_convnet_both_arms() {
    let p = conv_params();
    for (seed, (b, h, w)) in [(1usize, 64usize, 64usize), (2, 5, 7), (1, 1, 1)]
        .into_iter()
        .enumerate()
    {
        let x = rand_arr(30 + seed as u64, grafo::ndarray::Ix4(b, h, w, 3), 0.0, 1.0);
        for limit in [f32::INFINITY, 0.0] {
            let l = arr0(limit);
            let (want, second) = convnet_ref(&to_f64(&x), &p, limit as f64, false);
            assert_eq!(second, limit > 0.0);
            let what = format!("w3 {b}x{h}x{w} limit={limit}");
            let a = convnet(&x, &p.k0, &p.b0, &p.k1, &p.b1, &l).unwrap();
            assert_close(&format!("{what} compiled"), &a, &want);
            let e = convnet::eager(&x, &p.k0, &p.b0, &p.k1, &p.b1, &l).unwrap();
            assert_close(&format!("{what} eager"), &e, &want);
            let mut s = Session::default();
            let r = convnet::run(&mut s, &x, &p.k0, &p.b0, &p.k1, &p.b1, &l).unwrap();
            assert_close(&format!("{what} session"), &r, &want);
        }
    }
}

#[test]
fn w3_convnet_threshold_between_arms() {
    // A limit just above / below the norm of the first conv's output picks each arm.
    let p = conv_params();
    let x = rand_arr(40, grafo::ndarray::Ix4(1, 8, 8, 3), 0.0, 1.0);
    let y0 = zip2(
        &ref_conv2d(&to_f64(&x), &to_f64(&p.k0), 1, true),
        &to_f64(&p.b0),
        |a, b| a + b,
    );
    let n = ref_norm(&y0);
    for (limit, second) in [((n * 1.01) as f32, true), ((n * 0.99) as f32, false)] {
        let (want, s) = convnet_ref(&to_f64(&x), &p, limit as f64, false);
        assert_eq!(s, second);
        let a = convnet(&x, &p.k0, &p.b0, &p.k1, &p.b1, &arr0(limit)).unwrap();
        let e = convnet::eager(&x, &p.k0, &p.b0, &p.k1, &p.b1, &arr0(limit)).unwrap();
        assert_close(&format!("w3 limit={limit} compiled"), &a, &want);
        assert_close(&format!("w3 limit={limit} eager"), &e, &want);
    }
}

#[test]
fn w3_convnet_relu_both_arms() {
    let p = conv_params();
    let x = rand_arr(50, grafo::ndarray::Ix4(2, 32, 32, 3), -1.0, 1.0);
    for limit in [f32::INFINITY, 0.0, 1000.0] {
        let l = arr0(limit);
        let (want, _) = convnet_ref(&to_f64(&x), &p, limit as f64, true);
        let a = w3_convnet_relu(&x, &p.k0, &p.b0, &p.k1, &p.b1, &l).unwrap();
        let e = w3_convnet_relu::eager(&x, &p.k0, &p.b0, &p.k1, &p.b1, &l).unwrap();
        assert_close(&format!("w3 relu limit={limit} compiled"), &a, &want);
        assert_close(&format!("w3 relu limit={limit} eager"), &e, &want);
    }
}

fn assert_conv_groups_have_bias(g: &GraphDef, act: bool) {
    let convs = g.groups_of("conv2d");
    assert_eq!(convs.len(), 2, "{:#?}", g.groups);
    for c in convs {
        let ops = g.group_ops(c.id);
        assert_eq!(ops[0], "conv2d", "{ops:?}");
        assert!(
            ops.contains(&"add") || ops.contains(&"bias_add"),
            "conv group without its bias: {ops:?}"
        );
        if act {
            assert!(
                ops.contains(&"relu"),
                "conv group without its relu: {ops:?}"
            );
        }
    }
    assert_eq!(g.conds.len(), 1, "one cond node: {:#?}", g.conds);
}

#[test]
fn w3_conv_groups_include_bias() {
    assert_conv_groups_have_bias(&convnet::graph(), false);
    assert_conv_groups_have_bias(&w3_convnet_relu::graph(), true);
}

// ----- W4: layernorm --------------------------------------------------------------------------

fn layernorm_ref(x: &ArrayD<f64>, g: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let mean = ref_reduce(x, &[1], true, "mean");
    let d = zip2(x, &mean, |a, m| a - m);
    let var = ref_reduce(&d.mapv(|v| v * v), &[1], true, "mean");
    let n = zip2(&d, &var, |d, v| d / (v + 1e-5).sqrt());
    zip2(&zip2(&n, g, |a, b| a * b), b, |a, b| a + b)
}

#[test]
fn w4_layernorm_rows() {
    let gamma = rand_arr(61, grafo::ndarray::Ix1(1024), 0.5, 1.5);
    let beta = rand_arr(62, grafo::ndarray::Ix1(1024), -0.5, 0.5);
    for n in [0usize, 1, 3, 64] {
        let x = rand_arr(60 + n as u64, grafo::ndarray::Ix2(n, 1024), -3.0, 5.0);
        let want = layernorm_ref(&to_f64(&x), &to_f64(&gamma), &to_f64(&beta));
        let a = layernorm(&x, &gamma, &beta).unwrap();
        let e = layernorm::eager(&x, &gamma, &beta).unwrap();
        assert_close_tol(&format!("w4 compiled N={n}"), &a, &want, 1e-4, 1e-4);
        assert_close_tol(&format!("w4 eager N={n}"), &e, &want, 1e-4, 1e-4);
        let mut s = Session::new(SessionConfig {
            intra_op_threads: 2,
            ..Default::default()
        })
        .unwrap();
        let r = layernorm::run(&mut s, &x, &gamma, &beta).unwrap();
        assert_close_tol(&format!("w4 session N={n}"), &r, &want, 1e-4, 1e-4);
    }
}

#[test]
fn w4_layernorm_fusion() {
    let g = layernorm::graph();
    let big = vec![Dim::Symbol("N".into()), Dim::Static(1024)];
    let touches = |gr: &grafo::GroupDef| {
        gr.nodes.iter().any(|&n| {
            g.nodes[n].shape == big || g.nodes[n].inputs.iter().any(|&i| g.nodes[i].shape == big)
        })
    };
    let touching: Vec<_> = g
        .groups
        .iter()
        .filter(|gr| gr.kind != "view" && touches(gr))
        .collect();
    assert!(
        touching.len() <= 3,
        "{} groups touch the [N, 1024] data: {:#?}",
        touching.len(),
        touching
    );
    assert_eq!(
        touching.iter().filter(|gr| gr.kind == "reduce").count(),
        2,
        "{touching:#?}"
    );
    assert_eq!(
        touching
            .iter()
            .filter(|gr| gr.kind == "elementwise")
            .count(),
        1,
        "{touching:#?}"
    );
}

// ----- W5: seed scalars -----------------------------------------------------------------------

#[test]
fn w5_scalars() {
    let (a, b) = (arr0(5i32), arr0(3i32));
    assert_eq!(suma(&a, &b).unwrap(), arr0(8));
    assert_eq!(suma::eager(&a, &b).unwrap(), arr0(8));
    let mut s = Session::default();
    for _ in 0..3 {
        assert_eq!(suma::run(&mut s, &a, &b).unwrap(), arr0(8));
    }
    let (x, y) = (arr0(2.0f32), arr0(4.0f32));
    let (p, d) = two_fetches(&x, &y).unwrap();
    assert_eq!((p[()], d[()]), (8.0, 2.0));
    let (p, d) = two_fetches::eager(&x, &y).unwrap();
    assert_eq!((p[()], d[()]), (8.0, 2.0));
    let (p, d) = two_fetches::run(&mut s, &x, &y).unwrap();
    assert_eq!((p[()], d[()]), (8.0, 2.0));
}
