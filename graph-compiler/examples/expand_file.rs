//! Prints the expansion of the first `#[graph]` function in a file (a debugging aid): `cargo run -p graph-compiler --example expand_file -- FILE [ATTR]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a file");
    let attr: proc_macro2::TokenStream = args.next().unwrap_or_default().parse().expect("attr");
    let src = std::fs::read_to_string(path).expect("readable");
    let item: proc_macro2::TokenStream = src.parse().expect("tokens");
    let out = graph_compiler::expand(attr, item);
    match syn::parse2::<syn::File>(out.clone()) {
        Ok(f) => println!("{}", prettyplease::unparse(&f)),
        Err(_) => println!("{out}"),
    }
}
