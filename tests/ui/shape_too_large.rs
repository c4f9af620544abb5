use grafo::prelude::*;

#[graph]
fn f() -> Tensor<f32> {
    reduce_sum(ones([4294967296, 4294967296]))
}

fn main() {}
