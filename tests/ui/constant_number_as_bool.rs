use grafo::prelude::*;

#[graph]
fn f() -> Tensor<bool, 2> {
    constant::<bool>([true, 0])
}

fn main() {}
