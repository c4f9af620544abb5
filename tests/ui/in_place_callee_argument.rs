use grafo::prelude::*;

#[graph]
mod optim {
    pub fn sgd(w: &mut Tensor<f32, N>, g: Tensor<f32, N>) -> Tensor<f32> {
        w = w - 0.1 * g;
        reduce_sum(g)
    }

    pub fn step(w: &mut Tensor<f32, N>, g: Tensor<f32, N>) -> Tensor<f32> {
        // The in-place parameter needs `&mut` of a variable ...
        let a = sgd(w, g);
        // ... that is mutable ...
        let frozen = w * 1.0;
        let b = sgd(&mut frozen, g);
        // ... and a value parameter takes no `&mut`.
        let mut u = g;
        let c = sgd(&mut w, &mut u);
        a + b + c
    }
}

fn main() {}
