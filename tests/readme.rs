//! The README's 30-second example, compiled and run exactly as shown.

use grafo::prelude::*;

#[graph]
fn mlp(
    x: Tensor<f32, B, 784>,
    w1: Tensor<f32, 784, 512>,
    b1: Tensor<f32, 512>,
    w2: Tensor<f32, 512, 10>,
    b2: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    let h = relu(matmul(x, w1) + b1); // bias + relu run inside the matmul's epilogue
    softmax(matmul(h, w2) + b2, -1)
}

fn readme_main() -> Result<(), grafo::Error> {
    let x = Array2::<f32>::ones((32, 784));
    let (w1, b1) = (Array2::<f32>::zeros((784, 512)), Array1::<f32>::zeros(512));
    let (w2, b2) = (Array2::<f32>::zeros((512, 10)), Array1::<f32>::zeros(10));
    let fast = mlp(&x, &w1, &b1, &w2, &b2)?; // compiled, fused, parallel
    let slow = mlp::eager(&x, &w1, &b1, &w2, &b2)?; // op by op, the baseline
    assert_eq!(fast.shape(), &[32, 10]);
    assert!((fast[[0, 0]] - slow[[0, 0]]).abs() < 1e-6);
    println!("{}", mlp::graph().to_dot()); // the graph, for Graphviz
    Ok(())
}

#[test]
fn readme_example_runs() {
    readme_main().unwrap();
    let g = mlp::graph();
    let first = g.groups_of("matmul")[0];
    assert_eq!(g.group_ops(first.id), vec!["matmul", "add", "relu"]);
}
