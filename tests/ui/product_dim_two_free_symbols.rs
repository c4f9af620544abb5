use grafo::prelude::*;

// Neither `B` nor `H` is a plain dim of any parameter: the size 12 cannot be split between them.
#[graph]
fn f(x: Tensor<f32, { B * H }, 3>) -> Tensor<f32, { B * H }, 3> {
    x * 2.0
}

fn main() {}
