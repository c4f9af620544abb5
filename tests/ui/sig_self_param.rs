use grafo::prelude::*;

struct S;
impl S {
    #[graph]
    fn f(&self, x: Tensor<f32, N>) -> Tensor<f32, N> {
        x
    }
}

fn main() {}
