//! The three entry points of a `#[graph]` function (compiled, eager, a `Session` run) called on
//! the same arguments, for the tests that compare them.

/// `[("compiled", f(..)), ("eager", f::eager(..)), ("run", f::run(session, ..))]`, each a `Result`.
#[allow(unused_macros)]
macro_rules! runs {
    ($f:ident ( $($a:expr),* )) => {
        [
            ("compiled", $f($($a),*)),
            ("eager", $f::eager($($a),*)),
            ("run", $f::run(&mut Session::default(), $($a),*)),
        ]
    };
}

/// As [`runs!`], each result unwrapped (for calls that must succeed).
#[allow(unused_macros)]
macro_rules! runs_ok {
    ($f:ident ( $($a:expr),* )) => {
        [
            ("compiled", $f($($a),*).unwrap()),
            ("eager", $f::eager($($a),*).unwrap()),
            ("run", $f::run(&mut Session::default(), $($a),*).unwrap()),
        ]
    };
}
