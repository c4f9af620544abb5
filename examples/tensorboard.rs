//! Looking inside a compiled graph: W3's graph as a TensorBoard event file, and a per-group profile of a few runs as a Chrome trace.
//!
//! `cargo run --release --example tensorboard`

use grafo::prelude::*;

#[graph]
fn convnet(
    x: Tensor<f32, B, H, W, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, H, W, 16> {
    let mut y = conv2d(x, k0, 1, SAME) + b0;
    if norm(y) < limit {
        y = conv2d(y, k1, 1, SAME) + b1;
    }
    y
}

fn main() -> Result<(), grafo::Error> {
    let dir = std::env::temp_dir().join("grafo-tensorboard");
    let logdir = dir.join("logs");

    // The graph (nodes, cond subgraphs, fusion groups) for TensorBoard's Graphs tab.
    let graph = convnet::graph();
    let event_file = graph.write_tensorboard(&logdir)?;
    let size = std::fs::metadata(&event_file)
        .map_err(|e| grafo::Error::Io(e.to_string()))?
        .len();
    assert!(size > 0);
    println!(
        "graph `{}`: {} nodes, {} fusion groups -> {} ({size} bytes)",
        graph.name,
        graph.nodes.len(),
        graph.groups.len(),
        event_file.display()
    );

    // A profiling session: per-group wall times of every run.
    let mut sess = Session::new(SessionConfig {
        profile: true,
        ..Default::default()
    })?;
    let x = Array4::<f32>::from_elem((1, 512, 512, 3), 0.5);
    let k0 = Array4::<f32>::from_elem((3, 3, 3, 16), 0.01);
    let b0 = Array1::<f32>::from_elem(16, 0.1);
    let k1 = Array4::<f32>::from_elem((3, 3, 16, 16), 0.01);
    let b1 = Array1::<f32>::from_elem(16, 0.1);
    for limit in [f32::INFINITY, 0.0, f32::INFINITY] {
        let y = convnet::run(&mut sess, &x, &k0, &b0, &k1, &b1, &arr0(limit))?;
        let eager = convnet::eager(&x, &k0, &b0, &k1, &b1, &arr0(limit))?;
        for (a, b) in y.iter().zip(eager.iter()) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()));
        }
    }
    let report = sess.profile();
    assert!(!report.is_empty());
    print!("{report}");
    let trace = dir.join("convnet_trace.json");
    report.write_chrome_trace(&trace)?;
    assert!(std::fs::metadata(&trace)
        .map(|m| m.len() > 0)
        .unwrap_or(false));

    println!();
    println!(
        "graph:   tensorboard --logdir {}   (Graphs tab)",
        logdir.display()
    );
    println!(
        "profile: open {} in chrome://tracing or https://ui.perfetto.dev",
        trace.display()
    );
    Ok(())
}
