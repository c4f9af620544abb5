use grafo::prelude::*;

// `exp` has no dtype parameter; a turbofish on it is refused rather than ignored.
#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    exp::<f64>(x)
}

fn main() {}
