use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, B, 784>, w: Tensor<f32, 512, 10>, v: Tensor<f32, 3>) -> Tensor<f32, B, 10> {
    let h = matmul(x, w);
    let g = v + x;
    h + reduce_sum(g) * relu(h)
}

fn main() {}
