use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>, n: Tensor<i32, 3>) -> Tensor<i32, 3> {
    let y = reduce_sum(x * cast::<f32>(n));
    gradients(y, n)
}

fn main() {}
