//! Writes the generated `#[graph]` programs into `OUT_DIR`: `random.rs` (random graphs from a
//! fixed seed, each with a twin that disables every pass, and one test per graph),
//! `deep_nesting.rs` (a call nested 10,000 deep) and `long_programs.rs` (a 5,000-op chain,
//! as one expression and as one `let` per op).

use std::fmt::Write as _;

/// The random graphs written when `GRAFO_FUZZ_GRAPHS` is not set.
const DEFAULT_GRAPHS: usize = 24;
/// The seed used when `GRAFO_FUZZ_SEED` is not set.
const DEFAULT_SEED: u64 = 0x5eed_0011;
/// Nesting depth of `deep_nesting` and op count of the chains (issue 11, item 8), unless
/// `GRAFO_FUZZ_DEEP_NESTING` / `GRAFO_FUZZ_CHAIN_OPS` say otherwise. Measured on a 2-core Xeon
/// (2026-12-01): the debug build of both test binaries, with every dependency, from an empty
/// `target/` took 3 min 27 s; in release the 10,000-deep program took 4–7 min and the 5,000-op
/// chains more than 7 min (up to 2 GB of rustc memory), so CI runs them in debug only.
const DEEP_NESTING: usize = 10_000;
const CHAIN_OPS: usize = 5_000;

/// SplitMix64: a small, well-mixed deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// A value of the program being generated: its name and shape.
#[derive(Clone)]
struct Val {
    name: String,
    shape: Vec<usize>,
}

/// NumPy broadcasting of two static shapes.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i + a.len() >= r {
            a[i + a.len() - r]
        } else {
            1
        };
        let db = if i + b.len() >= r {
            b[i + b.len() - r]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

fn ty(shape: &[usize]) -> String {
    let mut s = String::from("Tensor<f32");
    for d in shape {
        write!(s, ", {d}").unwrap();
    }
    s.push('>');
    s
}

/// Literals where rewrites and accumulation show.
const LITERALS: &[&str] = &[
    "0.0", "(-0.0)", "1.0", "(-1.0)", "0.5", "2.0", "3.0", "4.0", "0.1", "1e30", "(-1e-40)", "1e-3",
];
const UNARY: &[&str] = &[
    "abs",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "square",
    "tanh",
    "sigmoid",
    "relu",
    "sin",
    "cos",
    "neg",
    "relu6",
    "sign",
    "floor",
    "ceil",
    "round",
    "log1p",
    "expm1",
    "reciprocal",
    "hard_sigmoid",
    "hard_swish",
    "silu",
    "softsign",
];
const INFIX: &[&str] = &["+", "-", "*", "/"];
const CALL2: &[&str] = &["pow", "maximum", "minimum"];
const REDUCE: &[&str] = &[
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
];
const SHAPES: &[&[usize]] = &[
    &[7],
    &[1],
    &[3, 5],
    &[1, 5],
    &[3, 1],
    &[2, 3, 5],
    &[4, 1, 3],
    &[17, 33],
];

struct Gen<'a> {
    rng: &'a mut Rng,
    vals: Vec<Val>,
    body: String,
    next: usize,
}

impl Gen<'_> {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("v{}", self.next)
    }

    fn any(&mut self) -> Val {
        let i = self.rng.below(self.vals.len());
        self.vals[i].clone()
    }

    /// A value whose shape broadcasts into `shape` (same rank or lower, dims 1 or equal).
    fn broadcasting_into(&mut self, shape: &[usize]) -> Option<Val> {
        let fits: Vec<Val> = self
            .vals
            .iter()
            .filter(|v| broadcast(&v.shape, shape).as_deref() == Some(shape))
            .cloned()
            .collect();
        (!fits.is_empty()).then(|| self.rng.pick(&fits).clone())
    }

    /// An elementwise expression of shape `a.shape` over `a` (and values broadcasting into it).
    fn elementwise(&mut self, a: &Val) -> String {
        match self.rng.below(5) {
            0 => format!("{}({})", self.rng.pick(UNARY), a.name),
            1 => {
                let lit = *self.rng.pick(LITERALS);
                let op = *self.rng.pick(INFIX);
                if self.rng.below(2) == 0 {
                    format!("({} {op} {lit})", a.name)
                } else {
                    format!("({lit} {op} {})", a.name)
                }
            }
            2 => {
                let b = self
                    .broadcasting_into(&a.shape.clone())
                    .unwrap_or_else(|| a.clone());
                format!("({} {} {})", a.name, self.rng.pick(INFIX), b.name)
            }
            3 => {
                let b = self
                    .broadcasting_into(&a.shape.clone())
                    .unwrap_or_else(|| a.clone());
                let f = *self.rng.pick(CALL2);
                let lit = *self.rng.pick(&["0.5", "2.0", "3.0", "(-1.0)", "0.0"]);
                if f == "pow" && self.rng.below(2) == 0 {
                    format!("pow({}, {lit})", a.name)
                } else {
                    format!("{f}({}, {})", a.name, b.name)
                }
            }
            _ => {
                let b = self
                    .broadcasting_into(&a.shape.clone())
                    .unwrap_or_else(|| a.clone());
                let c = self
                    .broadcasting_into(&a.shape.clone())
                    .unwrap_or_else(|| a.clone());
                format!("select({} > {}, {}, {})", b.name, c.name, a.name, b.name)
            }
        }
    }

    /// One `let` statement.
    fn statement(&mut self) {
        let a = self.any();
        let name = self.fresh();
        let (expr, shape) = match self.rng.below(10) {
            0..=4 => (self.elementwise(&a), a.shape.clone()),
            5 => {
                // A broadcast between two values of different shapes.
                let b = self.any();
                match broadcast(&a.shape, &b.shape) {
                    Some(s) => (
                        format!("({} {} {})", a.name, self.rng.pick(INFIX), b.name),
                        s,
                    ),
                    None => (self.elementwise(&a), a.shape.clone()),
                }
            }
            6 => {
                let r = *self.rng.pick(REDUCE);
                match (self.rng.below(4), a.shape.len()) {
                    (0, _) | (_, 0) => (format!("{r}({})", a.name), vec![]),
                    (1, _) => {
                        let mut s = a.shape.clone();
                        *s.last_mut().unwrap() = 1;
                        (format!("{r}({}, -1, true)", a.name), s)
                    }
                    (2, _) => (format!("norm({})", a.name), vec![]),
                    _ => (format!("{r}({}, 0)", a.name), a.shape[1..].to_vec()),
                }
            }
            7 if !a.shape.is_empty() => (format!("softmax({}, -1)", a.name), a.shape.clone()),
            8 => {
                // A cond as an expression: both arms of `a`'s shape.
                let p = self.any();
                let lit = *self.rng.pick(LITERALS);
                let t = self.elementwise(&a);
                let e = self.elementwise(&a);
                let red = *self.rng.pick(REDUCE);
                (
                    format!("if {red}({}) > {lit} {{ {t} }} else {{ {e} }}", p.name),
                    a.shape.clone(),
                )
            }
            _ => {
                // A cond statement with an output that is often dead (the early-stop pattern).
                let p = self.any();
                let dead = self.fresh();
                let t = self.elementwise(&a);
                let red = *self.rng.pick(REDUCE);
                writeln!(
                    self.body,
                    "    let mut {name} = {a};\n    let mut {dead} = s;\n    if {red}({p}) < 0.5 {{\n        {dead} = {red}({a});\n        {name} = {t};\n    }}",
                    a = a.name,
                    p = p.name,
                )
                .unwrap();
                self.vals.push(Val {
                    name,
                    shape: a.shape.clone(),
                });
                return;
            }
        };
        writeln!(self.body, "    let {name} = {expr};").unwrap();
        self.vals.push(Val { name, shape });
    }
}

/// One random graph `g{k}` (and its pass-free twin `g{k}_plain`) and its test.
fn random_graph(rng: &mut Rng, k: usize, out: &mut String) {
    let shape: Vec<usize> = rng.pick(SHAPES).to_vec();
    let last = *shape.last().unwrap();
    let params = [
        ("x", shape.clone()),
        ("y", shape.clone()),
        ("b", vec![last]),
        ("s", vec![]),
    ];
    let mut g = Gen {
        rng,
        vals: params
            .iter()
            .map(|(n, s)| Val {
                name: n.to_string(),
                shape: s.clone(),
            })
            .collect(),
        body: String::new(),
        next: 0,
    };
    let statements = 3 + g.rng.below(10);
    for _ in 0..statements {
        g.statement();
    }
    // The result: the last value of the full shape, combined with the last value computed.
    let last_val = g.vals.last().unwrap().clone();
    let full = g
        .vals
        .iter()
        .rev()
        .find(|v| v.shape == shape)
        .unwrap()
        .clone();
    let result = match broadcast(&full.shape, &last_val.shape) {
        Some(s) if s == shape => format!("{} + {}", full.name, last_val.name),
        _ => full.name.clone(),
    };
    let sig: Vec<String> = params
        .iter()
        .map(|(n, s)| format!("{n}: {}", ty(s)))
        .collect();
    let sig = sig.join(", ");
    let ret = ty(&shape);
    let body = &g.body;
    for (suffix, attr) in [
        ("", "#[graph]"),
        (
            "_plain",
            "#[graph(disable(fold, simplify, cse, dce, fusion))]",
        ),
    ] {
        writeln!(
            out,
            "{attr}\nfn g{k}{suffix}({sig}) -> {ret} {{\n{body}    {result}\n}}\n"
        )
        .unwrap();
    }
    let dims = |s: &[usize]| format!("{s:?}");
    writeln!(
        out,
        "#[test]\nfn g{k}_agrees() {{\n    let source = {source:?};\n    for case in 0..CASES {{\n        let x = input(&{xs}, {k}, case, 0);\n        let y = input(&{xs}, {k}, case, 1);\n        let b = input(&{bs}, {k}, case, 2);\n        let s = input(&[], {k}, case, 3);\n        let (x, y, b, s) = (x.into_dimensionality().unwrap(), y.into_dimensionality().unwrap(), b.into_dimensionality().unwrap(), s.into_dimensionality().unwrap());\n        agree(\"g{k}\", source, case, [\n            (\"compiled\", g{k}(&x, &y, &b, &s).map(|a| a.into_dyn())),\n            (\"run\", g{k}::run(&mut Session::default(), &x, &y, &b, &s).map(|a| a.into_dyn())),\n            (\"eager\", g{k}::eager(&x, &y, &b, &s).map(|a| a.into_dyn())),\n            (\"no passes\", g{k}_plain(&x, &y, &b, &s).map(|a| a.into_dyn())),\n            (\"no passes, eager\", g{k}_plain::eager(&x, &y, &b, &s).map(|a| a.into_dyn())),\n        ]);\n    }}\n}}\n",
        source = format!("fn g{k}({sig}) -> {ret} {{\n{body}    {result}\n}}"),
        xs = dims(&shape),
        bs = dims(&[last]),
    )
    .unwrap();
}

/// `neg(abs(neg(...x...)))`, `depth` calls deep.
fn deep_nesting(depth: usize) -> String {
    let mut e = String::with_capacity(depth * 6);
    for i in 0..depth {
        e.push_str(if i % 2 == 0 { "neg(" } else { "abs(" });
    }
    e.push('x');
    e.push_str(&")".repeat(depth));
    format!("#[graph]\nfn deep_nesting(x: Tensor<f32, N>) -> Tensor<f32, N> {{\n    {e}\n}}\n")
}

/// The literal and op of step `i` of the chains (the tests replay them).
fn chain_step(i: usize) -> (&'static str, &'static str) {
    const OPS: &[(&str, &str)] = &[("+", "0.5"), ("-", "0.25"), ("+", "1.5"), ("-", "1.75")];
    OPS[i % OPS.len()]
}

/// One expression of `ops` binary ops with literals, `x + 0.5 - 0.25 + ...` (left-nested
/// without parentheses: rustc's own parser recurses once per parenthesis, and rustc 1.95
/// overflows its stack on a plain `fn` with 2,000 nested parentheses, macro or not — it passes
/// at 1,000, and with `RUST_MIN_STACK=256MiB` at 5,000).
fn long_chain(ops: usize) -> String {
    let mut e = String::with_capacity(ops * 12);
    e.push('x');
    for i in 0..ops {
        let (op, lit) = chain_step(i);
        write!(e, " {op} {lit}").unwrap();
    }
    format!("#[graph]\nfn long_chain(x: Tensor<f32, N>) -> Tensor<f32, N> {{\n    {e}\n}}\n")
}

/// `ops` `let` statements, each one op with a literal.
fn long_lets(ops: usize) -> String {
    let mut s = String::from(
        "#[graph]\nfn long_lets(x: Tensor<f32, N>) -> Tensor<f32, N> {\n    let v0 = x;\n",
    );
    for i in 0..ops {
        let (op, lit) = chain_step(i);
        writeln!(s, "    let v{} = v{i} {op} {lit};", i + 1).unwrap();
    }
    writeln!(s, "    v{ops}\n}}").unwrap();
    s
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GRAFO_FUZZ_GRAPHS");
    println!("cargo:rerun-if-env-changed=GRAFO_FUZZ_SEED");
    println!("cargo:rerun-if-env-changed=GRAFO_FUZZ_DEEP_NESTING");
    println!("cargo:rerun-if-env-changed=GRAFO_FUZZ_CHAIN_OPS");
    let knob = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let deep_nesting_depth = knob("GRAFO_FUZZ_DEEP_NESTING", DEEP_NESTING);
    let chain_ops = knob("GRAFO_FUZZ_CHAIN_OPS", CHAIN_OPS);
    let graphs = std::env::var("GRAFO_FUZZ_GRAPHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_GRAPHS);
    let seed = std::env::var("GRAFO_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut rng = Rng(seed);
    let mut random =
        format!("/// The seed these graphs came from.\npub const SEED: u64 = {seed};\n\n");
    for k in 0..graphs {
        random_graph(&mut rng, k, &mut random);
    }
    std::fs::write(out_dir.join("random.rs"), random).expect("OUT_DIR is writable");
    for (file, program) in [
        (
            "deep_nesting.rs",
            format!(
                "pub const DEEP_NESTING: usize = {deep_nesting_depth};\n{}",
                deep_nesting(deep_nesting_depth)
            ),
        ),
        (
            "long_programs.rs",
            format!(
                "pub const CHAIN_OPS: usize = {chain_ops};\n{}\n{}",
                long_chain(chain_ops),
                long_lets(chain_ops)
            ),
        ),
    ] {
        std::fs::write(out_dir.join(file), program).expect("OUT_DIR is writable");
    }
}
