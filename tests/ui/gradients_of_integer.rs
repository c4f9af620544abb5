use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, 3>) -> Tensor<f32, 3> {
    let y = reduce_sum(cast::<i32>(x));
    gradients(y, x)
}

fn main() {}
