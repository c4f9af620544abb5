use grafo::prelude::*;

// An argument of the wrong syntactic kind is named with the op's signature.
#[graph]
fn f(x: Tensor<f32, 2>) -> Tensor<f32, 2> {
    softmax(x, [1])
}

fn main() {}
