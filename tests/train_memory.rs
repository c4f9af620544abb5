//! What a train step holds: the roles and saved tensors `graph()` shows, the planned bytes of the buffer plan with and without the recompute pass, the arena a `Session` really holds, and recompute never changing a bit.

#[path = "common/training.rs"]
mod training;

use grafo::prelude::*;
use grafo::{GraphDef, Role};

/// A step whose backward pass reads `h = exp(x * w)`, a cheap chain of what the step keeps
/// anyway (the input and the parameter): the recompute pass computes `h` again there.
#[graph]
fn exp_step(x: Tensor<f32, N>, w: &mut Tensor<f32, N>) -> Tensor<f32> {
    let h = exp(x * w);
    let loss = reduce_mean(h * h);
    let gw = gradients(loss, w);
    w = w - 0.01 * gw;
    loss
}

/// The same step with the backward pass keeping `h`.
#[graph(disable(recompute))]
fn exp_step_kept(x: Tensor<f32, N>, w: &mut Tensor<f32, N>) -> Tensor<f32> {
    let h = exp(x * w);
    let loss = reduce_mean(h * h);
    let gw = gradients(loss, w);
    w = w - 0.01 * gw;
    loss
}

/// W8 in place with the backward pass keeping what it reads (`training.rs` has the step).
#[graph(disable(recompute))]
#[allow(clippy::too_many_arguments)]
fn mlp_step_kept(
    x: Tensor<f32, B, 784>,
    labels: Tensor<i32, B>,
    w1: &mut Tensor<f32, 784, 512>,
    b1: &mut Tensor<f32, 512>,
    w2: &mut Tensor<f32, 512, 10>,
    b2: &mut Tensor<f32, 10>,
    mw1: &mut Tensor<f32, 784, 512>,
    mb1: &mut Tensor<f32, 512>,
    mw2: &mut Tensor<f32, 512, 10>,
    mb2: &mut Tensor<f32, 10>,
    vw1: &mut Tensor<f32, 784, 512>,
    vb1: &mut Tensor<f32, 512>,
    vw2: &mut Tensor<f32, 512, 10>,
    vb2: &mut Tensor<f32, 10>,
    t: f32,
) -> Tensor<f32> {
    let h = relu(matmul(x, w1) + b1);
    let logits = matmul(h, w2) + b2;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gw1, gb1, gw2, gb2) = gradients(loss, (w1, b1, w2, b2));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (w1, mw1, vw1) = apply_adam(w1, mw1, vw1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw1);
    (b1, mb1, vb1) = apply_adam(b1, mb1, vb1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb1);
    (w2, mw2, vw2) = apply_adam(w2, mw2, vw2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw2);
    (b2, mb2, vb2) = apply_adam(b2, mb2, vb2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb2);
    loss
}

/// W9 with the backward pass keeping what it reads (`training.rs` has the step).
#[graph(disable(recompute))]
#[allow(clippy::too_many_arguments)]
fn cnn_step_kept(
    x: Tensor<f32, B, 28, 28, 1>,
    labels: Tensor<i32, B>,
    k1: &mut Tensor<f32, 3, 3, 1, 32>,
    c1: &mut Tensor<f32, 32>,
    k2: &mut Tensor<f32, 3, 3, 32, 64>,
    c2: &mut Tensor<f32, 64>,
    w: &mut Tensor<f32, 1600, 10>,
    c: &mut Tensor<f32, 10>,
    mk1: &mut Tensor<f32, 3, 3, 1, 32>,
    mc1: &mut Tensor<f32, 32>,
    mk2: &mut Tensor<f32, 3, 3, 32, 64>,
    mc2: &mut Tensor<f32, 64>,
    mw: &mut Tensor<f32, 1600, 10>,
    mc: &mut Tensor<f32, 10>,
    vk1: &mut Tensor<f32, 3, 3, 1, 32>,
    vc1: &mut Tensor<f32, 32>,
    vk2: &mut Tensor<f32, 3, 3, 32, 64>,
    vc2: &mut Tensor<f32, 64>,
    vw: &mut Tensor<f32, 1600, 10>,
    vc: &mut Tensor<f32, 10>,
    t: f32,
) -> Tensor<f32> {
    let y = max_pool2d(relu(conv2d(x, k1, 1, VALID) + c1), 2, 2, VALID);
    let y = max_pool2d(relu(conv2d(y, k2, 1, VALID) + c2), 2, 2, VALID);
    let logits = matmul(reshape(y, [B, 1600]), w) + c;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gk1, gc1, gk2, gc2, gw, gc) = gradients(loss, (k1, c1, k2, c2, w, c));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (k1, mk1, vk1) = apply_adam(k1, mk1, vk1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gk1);
    (c1, mc1, vc1) = apply_adam(c1, mc1, vc1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc1);
    (k2, mk2, vk2) = apply_adam(k2, mk2, vk2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gk2);
    (c2, mc2, vc2) = apply_adam(c2, mc2, vc2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc2);
    (w, mw, vw) = apply_adam(w, mw, vw, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw);
    (c, mc, vc) = apply_adam(c, mc, vc, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gc);
    loss
}

fn names(g: &GraphDef, pick: impl Fn(&grafo::NodeDef) -> bool) -> Vec<String> {
    g.nodes
        .iter()
        .filter(|n| pick(n))
        .map(|n| n.name.clone())
        .collect()
}

fn bits<'a>(a: impl IntoIterator<Item = &'a f32>) -> Vec<u32> {
    a.into_iter().map(|v| v.to_bits()).collect()
}

#[test]
fn graph_shows_forward_backward_update_and_saved_tensors() {
    let g = training::mlp_train_step_in_place::graph();
    assert!(
        g.passes.contains(&"recompute".to_string()),
        "{:?}",
        g.passes
    );
    for role in [Role::Forward, Role::Backward, Role::Update] {
        assert!(!g.nodes_of(role).is_empty(), "no {} node", role.name());
    }
    assert_eq!(g.node("h").map(|n| n.role), Some(Role::Forward));
    assert_eq!(
        g.node("gradients/d_w1").map(|n| n.role),
        Some(Role::Backward)
    );
    // The backward pass reads `h` (relu's rule and w2's gradient) and the parameters it
    // multiplies by; no backward or update value is saved.
    let saved = names(&g, |n| n.saved);
    assert!(saved.contains(&"h".to_string()), "{saved:?}");
    assert!(saved.contains(&"w2".to_string()), "{saved:?}");
    assert!(g.saved().iter().all(|n| n.role == Role::Forward));
    // Adam's loops read the gradients: they are the update.
    let written = g
        .inputs
        .iter()
        .find(|i| i.name == "w1")
        .and_then(|i| i.written_from);
    assert_eq!(written.map(|w| g.nodes[w].role), Some(Role::Update));

    let dot = g.to_dot();
    assert!(dot.contains("legend_saved"), "no legend");
    assert!(dot.contains("fillcolor=\"#fde3c8\""), "no backward colour");
    assert!(dot.contains("\\nsaved"), "no saved label");
    let tf = g.to_tensorflow();
    let tf_names: Vec<&str> = tf.node.iter().map(|n| n.name.as_str()).collect();
    assert!(tf_names.contains(&"h"), "forward nodes keep their names");
    assert!(tf_names.contains(&"gradients/d_w1"), "{tf_names:?}");
    assert!(
        tf_names.iter().any(|n| n.starts_with("update/")),
        "{tf_names:?}"
    );
    let h = tf.node.iter().find(|n| n.name == "h").expect("h");
    assert!(h.attr.contains_key("_saved") && h.attr.contains_key("_role"));
}

#[test]
fn recompute_keeps_less_and_changes_no_bit() {
    let (with, kept) = (exp_step::graph(), exp_step_kept::graph());
    assert_eq!(
        names(&with, |n| n.saved && n.op != "input"),
        Vec::<String>::new()
    );
    assert_eq!(names(&kept, |n| n.saved && n.op != "input"), vec!["h"]);
    let copies = names(&with, |n| n.name.starts_with("recompute/"));
    assert!(copies.contains(&"recompute/h".to_string()), "{copies:?}");
    assert!(with
        .nodes
        .iter()
        .filter(|n| n.name.starts_with("recompute/"))
        .all(|n| n.role == Role::Backward));
    for n in [1usize, 7, 1023, 4096] {
        let symbols = [("N", n)];
        let (m, k) = (
            with.memory(&symbols).unwrap(),
            kept.memory(&symbols).unwrap(),
        );
        assert_eq!((m.saved, k.saved), (0, 4 * n as u64), "N = {n}");
        assert!(m.peak <= k.peak, "N = {n}: {} > {}", m.peak, k.peak);
        assert!(m.buffer_bytes() <= k.buffer_bytes(), "N = {n}");

        let x = Array1::from_shape_fn(n, |i| ((i % 13) as f32 - 6.0) * 0.1);
        let w0 = Array1::from_shape_fn(n, |i| ((i % 7) as f32 - 3.0) * 0.05);
        let mut w_c = w0.clone();
        let mut w_e = w0.clone();
        let mut w_k = w0.clone();
        let mut session = Session::new(SessionConfig::default()).unwrap();
        let mut w_s = w0.clone();
        for _ in 0..3 {
            let lc = exp_step(&x, &mut w_c).unwrap();
            let le = exp_step::eager(&x, &mut w_e).unwrap();
            let lk = exp_step_kept(&x, &mut w_k).unwrap();
            let ls = exp_step::run(&mut session, &x, &mut w_s).unwrap();
            assert_eq!(bits(&lc), bits(&le), "N = {n}");
            assert_eq!(bits(&lk), bits(&le), "N = {n}");
            assert_eq!(bits(&ls), bits(&le), "N = {n}");
            assert_eq!(bits(&w_c), bits(&w_e), "N = {n}");
            assert_eq!(bits(&w_k), bits(&w_e), "N = {n}");
            assert_eq!(bits(&w_s), bits(&w_e), "N = {n}");
        }
        // The plan's buffers are what the session's arena holds.
        assert_eq!(session.arena_bytes() as u64, m.buffer_bytes(), "N = {n}");
    }
}

#[test]
fn planned_bytes_of_w8_and_w9() {
    let w8 = training::mlp_train_step_in_place::graph()
        .memory(&[("B", 256)])
        .unwrap();
    let w8_kept = mlp_step_kept::graph().memory(&[("B", 256)]).unwrap();
    let w9 = training::cnn_train_step::graph()
        .memory(&[("B", 64)])
        .unwrap();
    let w9_kept = cnn_step_kept::graph().memory(&[("B", 64)]).unwrap();
    // Recompute never holds more than keeping everything the backward pass reads.
    assert!(w8.peak <= w8_kept.peak && w8.buffer_bytes() <= w8_kept.buffer_bytes());
    assert!(w9.peak <= w9_kept.peak && w9.buffer_bytes() <= w9_kept.buffer_bytes());
    // Every value W8's and W9's backward passes read comes out of a matmul, a convolution's
    // epilogue, a pooling or the softmax, none of which is recomputed: the cut keeps them all.
    for g in [
        training::mlp_train_step_in_place::graph(),
        training::cnn_train_step::graph(),
    ] {
        let computed = names(&g, |n| n.saved && n.op != "input");
        eprintln!("{}: saved {computed:?}", g.name);
        assert!(names(&g, |n| n.name.starts_with("recompute/")).is_empty());
    }
    // `h` ([256, 512] f32) is the bulk of what W8's backward pass keeps.
    assert!(w8.saved >= 256 * 512 * 4, "{w8:?}");
    assert!(w8.peak <= w8.buffer_bytes() + w8.results);
    assert!(w9.peak <= w9.buffer_bytes() + w9.results);
    eprintln!(
        "W8: buffers {} B, peak live {} B (step {}), saved {} B; without recompute: buffers {} B, peak {} B",
        w8.buffer_bytes(),
        w8.peak,
        w8.peak_step,
        w8.saved,
        w8_kept.buffer_bytes(),
        w8_kept.peak
    );
    eprintln!(
        "W9: buffers {} B, peak live {} B (step {}), saved {} B; without recompute: buffers {} B, peak {} B",
        w9.buffer_bytes(),
        w9.peak,
        w9.peak_step,
        w9.saved,
        w9_kept.buffer_bytes(),
        w9_kept.peak
    );
}
