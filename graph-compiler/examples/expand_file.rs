//! Prints the expansion of the `#[graph]` item in a file (a debugging aid): `cargo run -p graph-compiler --example expand_file -- FILE [ATTR] [--raw]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("a file");
    let attr: proc_macro2::TokenStream = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("")
        .parse()
        .expect("attr");
    let raw = args.iter().any(|a| a == "--raw");
    let src = std::fs::read_to_string(path).expect("readable");
    // The token trees of a deep program are deep too: tokenize and print on a big stack.
    stacker::grow(1 << 30, || {
        let item: proc_macro2::TokenStream = src.parse().expect("tokens");
        let out = graph_compiler::expand(attr, item);
        if raw {
            println!("{out}");
            return;
        }
        match syn::parse2::<syn::File>(out.clone()) {
            Ok(f) => println!("{}", prettyplease::unparse(&f)),
            Err(_) => println!("{out}"),
        }
    });
}
