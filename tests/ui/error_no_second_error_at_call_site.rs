use grafo::prelude::*;

#[graph]
fn mlp(x: Tensor<f32, B, 784>, w: Tensor<f32, 512, 10>) -> Tensor<f32, B, 10> {
    matmul(x, w)
}

fn main() {
    let x = Array2::<f32>::zeros((2, 784));
    let w = Array2::<f32>::zeros((512, 10));
    let y: Array2<f32> = mlp(&x, &w).unwrap();
    let z: Array2<f32> = mlp::eager(&x, &w).unwrap();
    println!("{y} {z}");
}
