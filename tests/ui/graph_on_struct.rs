use grafo::prelude::*;

#[graph]
struct Model {
    width: usize,
}

fn main() {}
