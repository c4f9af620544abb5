use grafo::prelude::*;

#[graph]
fn f(w: &mut Tensor<f32, 3>, n: &mut Tensor<i32, 3>, g: Tensor<f32, 3>) -> Tensor<f32, 3> {
    w = reduce_sum(w * g);
    n = cast::<f32>(n);
    g
}

fn main() {}
