use grafo::prelude::*;

#[graph]
fn f(x: Tensor<f32, N>) -> Tensor<f32, N> {
    const K: i64 = 5;
    assert_less(K, 3, "K must be below 3");
    x
}

fn main() {}
