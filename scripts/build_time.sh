#!/usr/bin/env bash
# The edit-compile loop of a #[graph] crate: edits one line of a source file, rebuilds, and
# prints the median wall time of several runs for each mode (release build, debug build,
# `cargo check`). A timing is reported, never asserted.
#
#   scripts/build_time.sh [--runs N] [--modes "release debug check"] TARGET...
#
# TARGET is either
#   - `example:NAME`, an example of this workspace (examples/NAME.rs is edited, built with
#     `cargo build [--release] --example NAME` in the workspace, with its profiles), or
#   - `crate:DIR[:FILE]`, a user's crate (a directory with a Cargo.toml, relative or
#     absolute; FILE, relative to DIR, is the file edited, `src/main.rs` by default, else
#     `src/lib.rs`), built with `cargo build [--release]` in DIR with its own profiles, or
#   - `user:NAME`, examples/NAME.rs copied into a fresh user crate (under
#     target/build-time/NAME, depending on this checkout's `grafo` by path, with Cargo's
#     default profiles, as a user's crate has them), then timed as `crate:` is.
#
# The edit inserts one comment line at the top of FILE (a new line each run, so the source
# really changes, and every line below moves: the whole crate's spans, hence its debug info,
# change, so an incremental debug build cannot reuse what the line did not touch), and the
# file is restored on exit. Before the timed runs of a mode, one untimed
# build brings the dependencies up to date. Each mode prints the median, min and max wall
# time and the median CPU time (user + system of cargo and the rustc it ran, from
# /usr/bin/time): on a shared machine the CPU time moves less than the wall time, and it
# still counts when the build is paused. Each line ends with the 1-minute load average read
# just before its runs.
set -euo pipefail

runs=3
modes="release debug check"
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --modes) modes="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || { echo "usage: $0 [--runs N] [--modes M] TARGET..." >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
cargo=${CARGO:-cargo}

# Files to restore on exit: "path backup" pairs.
restore=()
cleanup() {
    local i
    for ((i = 0; i < ${#restore[@]}; i += 2)); do
        cp "${restore[i+1]}" "${restore[i]}" && rm -f "${restore[i+1]}"
    done
}
trap cleanup EXIT

load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# A fresh user crate holding examples/NAME.rs; prints its directory.
user_crate() {
    local name=$1 dir="$repo/target/build-time/$1"
    mkdir -p "$dir/src"
    cat > "$dir/Cargo.toml.new" <<EOF
[package]
name = "build-time-$name"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
grafo = { path = "$repo" }

[workspace]
EOF
    # Rewrite only on change, so that a second run reuses its build.
    cmp -s "$dir/Cargo.toml.new" "$dir/Cargo.toml" 2>/dev/null || mv "$dir/Cargo.toml.new" "$dir/Cargo.toml"
    rm -f "$dir/Cargo.toml.new"
    cmp -s "$repo/examples/$name.rs" "$dir/src/main.rs" 2>/dev/null || cp "$repo/examples/$name.rs" "$dir/src/main.rs"
    echo "$dir"
}

printf '%-28s %-8s %4s %9s %7s %7s %9s %6s\n' target mode runs "wall med" min max "cpu med" load
for target in "${targets[@]}"; do
    case "$target" in
        example:*)
            name=${target#example:}
            dir=$repo
            file=$repo/examples/$name.rs
            extra=(--example "$name")
            ;;
        crate:*|user:*)
            if [ "${target%%:*}" = user ]; then
                dir=$(user_crate "${target#user:}")
                rel=src/main.rs
            else
                spec=${target#crate:}
                dir=${spec%%:*}
                rel=${spec#"$dir"}
                rel=${rel#:}
                dir=$(cd "$dir" && pwd)  # relative to where the script was started
                if [ -z "$rel" ]; then
                    rel=src/main.rs
                    [ -f "$dir/$rel" ] || rel=src/lib.rs
                fi
            fi
            file=$dir/$rel
            extra=()
            ;;
        *) echo "unknown target $target (example:NAME, crate:DIR[:FILE], user:NAME)" >&2; exit 2 ;;
    esac
    [ -f "$file" ] || { echo "no file $file" >&2; exit 2; }
    backup=$(mktemp)
    cp "$file" "$backup"
    restore+=("$file" "$backup")
    for mode in $modes; do
        case "$mode" in
            release) cmd=(build --release) ;;
            debug) cmd=(build) ;;
            check) cmd=(check) ;;
            *) echo "unknown mode $mode" >&2; exit 2 ;;
        esac
        (cd "$dir" && "$cargo" "${cmd[@]}" "${extra[@]}" --quiet)
        l=$(load)
        times=()
        cpus=()
        for ((r = 1; r <= runs; r++)); do
            { echo "// build_time.sh edit $mode $r $$"; cat "$backup"; } > "$file"
            stats=$(mktemp)
            (cd "$dir" && /usr/bin/time -o "$stats" -f '%e %U %S' "$cargo" "${cmd[@]}" "${extra[@]}" --quiet)
            read -r wall user sys < "$stats"
            rm -f "$stats"
            times+=("$wall")
            cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')")
            cp "$backup" "$file"
        done
        med=$(printf '%s\n' "${times[@]}" | median)
        min=$(printf '%s\n' "${times[@]}" | sort -g | head -n 1)
        max=$(printf '%s\n' "${times[@]}" | sort -g | tail -n 1)
        cpu=$(printf '%s\n' "${cpus[@]}" | median)
        printf '%-28s %-8s %4d %9.1f %7.1f %7.1f %9.1f %6s\n' "$target" "$mode" "$runs" "$med" "$min" "$max" "$cpu" "$l"
    done
done
