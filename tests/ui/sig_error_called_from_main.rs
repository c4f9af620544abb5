use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f16, N>) -> Tensor<f32, N> {
    exp(x)
}

fn main() {
    let x = Array1::<f32>::zeros(4);
    let _ = f(&x);
}
