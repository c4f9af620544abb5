//! The memory a compiled graph's static buffer plan holds (`NAME::graph().memory(&[("B", 256)])`): each buffer's bytes, the bytes live at each step of the schedule, their peak, and what the backward pass keeps from the forward one.
//!
//! Everything is read from the [`GraphDef`]: the sizes from the nodes' shapes with the
//! symbols bound, the lifetimes from the schedule (a value lives from the group that writes
//! it to the last group that reads it, directly or through a `reshape` view; a result or an
//! in-place parameter's new value to the end). The parameters and inputs are the caller's
//! arrays and are not counted; neither is the scratch a kernel uses inside one call.

use super::def::{Dim, GraphDef, Region, Role};
use crate::dtype::DType;
use crate::error::Error;

/// The bytes of a graph's buffer plan for one binding of its symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Each buffer of the plan: the largest value it holds, in bytes (its id is its index).
    pub buffers: Vec<u64>,
    /// The bytes of the values live while each group of the schedule runs, in schedule order:
    /// a buffer counts with the value it holds then, a fresh result from its group to the end.
    pub live: Vec<u64>,
    /// The largest entry of [`MemoryPlan::live`].
    pub peak: u64,
    /// The schedule position of the peak (the first one, if several).
    pub peak_step: usize,
    /// The fresh allocations (results) among the values, in bytes: returned to the caller.
    pub results: u64,
    /// The saved values computed by the graph (not its inputs): the forward values the
    /// backward pass reads, each held from its forward group to its last backward reader
    /// (a saved view counts as the buffer under it, each buffer once).
    pub saved: u64,
}

impl MemoryPlan {
    /// What the buffer plan holds once it has run: every buffer at its largest size (a
    /// `Session` keeps them between calls, see `Session::arena_bytes`).
    pub fn buffer_bytes(&self) -> u64 {
        self.buffers.iter().sum()
    }
}

impl GraphDef {
    /// The buffer plan's bytes with the symbols bound (`&[("B", 256)]`); an `Err` names a
    /// symbol the shapes use that `symbols` does not bind, or a size that overflows `u64`.
    pub fn memory(&self, symbols: &[(&str, usize)]) -> Result<MemoryPlan, Error> {
        let bytes: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| {
                let mut elems: u64 = 1;
                for d in &n.shape {
                    elems = elems
                        .checked_mul(dim_size(d, symbols)?)
                        .ok_or_else(overflow)?;
                }
                elems
                    .checked_mul(element_bytes(n.dtype))
                    .ok_or_else(overflow)
            })
            .collect::<Result<_, Error>>()?;
        let n_groups = self.groups.len();
        // The schedule position of each group: an arm's group runs where its cond's does.
        let mut position: Vec<usize> = vec![0; n_groups];
        for (p, &g) in self.schedule.iter().enumerate() {
            if g < n_groups {
                position[g] = p;
            }
        }
        let cond_position = |cond: usize| -> Option<usize> {
            let node = self.conds.get(cond)?.node;
            let g = self.nodes.get(node)?.group?;
            position.get(g).copied()
        };
        let main_position = |g: usize| -> usize {
            let mut region = self.groups[g].region;
            let mut p = position[g];
            for _ in 0..=self.conds.len() {
                let Region::CondArm { cond, .. } = region else {
                    break;
                };
                match cond_position(cond) {
                    Some(q) => p = q,
                    None => break,
                }
                region = self
                    .conds
                    .get(cond)
                    .and_then(|c| self.nodes.get(c.node))
                    .map_or(Region::Main, |n| n.region);
            }
            p
        };
        let end = self.schedule.len();
        // The last position reading each node, through views.
        let mut last_read: Vec<Option<usize>> = vec![None; self.nodes.len()];
        let read = |last_read: &mut Vec<Option<usize>>, mut x: usize, p: usize| {
            // A view reads its input's buffer: follow `reshape`s down to the buffer.
            for _ in 0..=self.nodes.len() {
                let Some(slot) = last_read.get_mut(x) else {
                    return;
                };
                *slot = Some(slot.map_or(p, |q| q.max(p)));
                let node = &self.nodes[x];
                let is_view = node
                    .group
                    .and_then(|g| self.groups.get(g))
                    .is_some_and(|g| g.kind == "view");
                match node.inputs.first() {
                    Some(&i) if is_view => x = i,
                    _ => return,
                }
            }
        };
        for (g, group) in self.groups.iter().enumerate() {
            let p = main_position(g);
            for &m in &group.nodes {
                for &x in self.nodes.get(m).map_or(&[][..], |n| &n.inputs[..]) {
                    if !group.nodes.contains(&x) {
                        read(&mut last_read, x, p);
                    }
                }
            }
        }
        for cond in &self.conds {
            let p = self
                .nodes
                .get(cond.node)
                .and_then(|n| n.group)
                .map_or(end, main_position);
            for &(_, t, e) in &cond.outputs {
                read(&mut last_read, t, p);
                read(&mut last_read, e, p);
            }
        }
        let written: Vec<usize> = self.inputs.iter().filter_map(|i| i.written_from).collect();
        for &o in self.outputs.iter().chain(&written) {
            read(&mut last_read, o, end);
        }

        let mut live = vec![0u64; end];
        let mut results = 0u64;
        // Per buffer, the values it holds with their spans; per step the largest live one.
        let mut per_buffer: Vec<Vec<(usize, usize, u64)>> = vec![Vec::new(); self.buffers.len()];
        for (g, group) in self.groups.iter().enumerate() {
            let v = group.output;
            let Some(node) = self.nodes.get(v) else {
                continue;
            };
            if node.shape.is_empty()
                || matches!(group.kind.as_str(), "view" | "cond" | "scalar" | "assert")
                || written.contains(&v)
            {
                continue;
            }
            let start = main_position(g);
            let stop = last_read[v].unwrap_or(start).max(start);
            match group.buffer {
                Some(b) if b < per_buffer.len() => per_buffer[b].push((start, stop, bytes[v])),
                _ => {
                    // A fresh array: a result, held from here to the end.
                    results += bytes[v];
                    for l in &mut live[start.min(end)..] {
                        *l += bytes[v];
                    }
                }
            }
        }
        let mut buffers = vec![0u64; self.buffers.len()];
        for (b, buffer) in self.buffers.iter().enumerate() {
            buffers[b] = buffer.values.iter().map(|&v| bytes[v]).max().unwrap_or(0);
        }
        for spans in &per_buffer {
            for (p, l) in live.iter_mut().enumerate() {
                *l += spans
                    .iter()
                    .filter(|&&(s, e, _)| s <= p && p <= e)
                    .map(|&(_, _, b)| b)
                    .max()
                    .unwrap_or(0);
            }
        }
        let (peak_step, peak) =
            live.iter().enumerate().fold(
                (0, 0),
                |(bp, bv), (p, &v)| if v > bv { (p, v) } else { (bp, bv) },
            );
        // A saved view holds the buffer under it: count each buffer once, an input's never.
        let is_view = |i: usize| {
            self.nodes[i]
                .group
                .and_then(|g| self.groups.get(g))
                .is_some_and(|g| g.kind == "view")
        };
        let mut held = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.saved || n.role != Role::Forward {
                continue;
            }
            let mut base = i;
            for _ in 0..=self.nodes.len() {
                match self.nodes[base].inputs.first() {
                    Some(&x) if is_view(base) && x < self.nodes.len() => base = x,
                    _ => break,
                }
            }
            let b = &self.nodes[base];
            if b.op != "input" && b.group.is_some() && !is_view(base) {
                held[base] = true;
            }
        }
        let saved = (0..self.nodes.len())
            .filter(|&i| held[i])
            .map(|i| bytes[i])
            .sum();
        Ok(MemoryPlan {
            buffers,
            live,
            peak,
            peak_step,
            results,
            saved,
        })
    }
}

fn overflow() -> Error {
    Error::InvalidArgument {
        op: "memory",
        message: "a size of the buffer plan overflows u64".to_string(),
    }
}

/// The bytes of one element.
fn element_bytes(dtype: DType) -> u64 {
    match dtype {
        DType::F32 | DType::I32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    }
}

/// The size of one dim with the symbols bound: a size, a symbol, or a product of them
/// (`B*784`, as the compiler writes a product of dims).
fn dim_size(d: &Dim, symbols: &[(&str, usize)]) -> Result<u64, Error> {
    let symbol = |s: &str| -> Result<u64, Error> {
        if let Ok(n) = s.parse::<u64>() {
            return Ok(n);
        }
        symbols
            .iter()
            .find(|(name, _)| *name == s)
            .map(|&(_, v)| v as u64)
            .ok_or_else(|| Error::InvalidArgument {
                op: "memory",
                message: format!("the graph's shapes use the symbol `{s}`: bind it"),
            })
    };
    match d {
        Dim::Static(n) => Ok(*n as u64),
        Dim::Symbol(s) => symbol(s),
        Dim::Expr(e) => e.split('*').try_fold(1u64, |acc, part| {
            acc.checked_mul(symbol(part.trim())?).ok_or_else(overflow)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{BufferDef, GroupDef, NodeDef};

    fn node(
        id: usize,
        op: &str,
        inputs: &[usize],
        shape: Vec<Dim>,
        group: Option<usize>,
    ) -> NodeDef {
        NodeDef {
            id,
            name: format!("n{id}"),
            op: op.to_string(),
            inputs: inputs.to_vec(),
            dtype: DType::F32,
            shape,
            line: 0,
            attrs: Vec::new(),
            region: Region::Main,
            group,
            role: Role::Forward,
            saved: false,
        }
    }

    fn group(id: usize, kind: &str, nodes: &[usize], buffer: Option<usize>) -> GroupDef {
        GroupDef {
            id,
            kind: kind.to_string(),
            nodes: nodes.to_vec(),
            output: *nodes.last().unwrap_or(&0),
            buffer,
            in_place: false,
            region: Region::Main,
            records_for: None,
        }
    }

    /// x -> a = exp(x) [buffer 0] -> b = a * 2 [buffer 1] -> c = reshape(b) -> d = c + a
    /// [result]: `a` lives to the last step, `b` through its view `c`.
    fn chain() -> GraphDef {
        let b = || vec![Dim::Symbol("B".into()), Dim::Static(4)];
        let flat = || vec![Dim::Expr("B*4".into())];
        GraphDef {
            name: "chain".into(),
            inputs: Vec::new(),
            nodes: vec![
                node(0, "input", &[], b(), None),
                node(1, "exp", &[0], b(), Some(0)),
                node(2, "mul", &[1], b(), Some(1)),
                node(3, "reshape", &[2], flat(), Some(2)),
                node(4, "reshape", &[1], flat(), Some(3)),
                node(5, "add", &[3, 4], flat(), Some(4)),
            ],
            conds: Vec::new(),
            groups: vec![
                group(0, "elementwise", &[1], Some(0)),
                group(1, "elementwise", &[2], Some(1)),
                group(2, "view", &[3], None),
                group(3, "view", &[4], None),
                group(4, "elementwise", &[5], None),
            ],
            schedule: (0..5).collect(),
            buffers: vec![
                BufferDef {
                    id: 0,
                    dtype: DType::F32,
                    size: "B*4".into(),
                    values: vec![1],
                },
                BufferDef {
                    id: 1,
                    dtype: DType::F32,
                    size: "B*4".into(),
                    values: vec![2],
                },
            ],
            outputs: vec![5],
            passes: Vec::new(),
        }
    }

    #[test]
    fn live_bytes_follow_views_and_results() {
        let m = chain().memory(&[("B", 8)]).expect("B is bound");
        let v = 8 * 4 * 4;
        assert_eq!(m.buffers, vec![v, v]);
        assert_eq!(m.buffer_bytes(), 2 * v);
        // a; a and b; a and b (views); a, b and the result d.
        assert_eq!(m.live, vec![v, 2 * v, 2 * v, 2 * v, 3 * v]);
        assert_eq!((m.peak, m.peak_step), (3 * v, 4));
        assert_eq!(m.results, v);
        assert_eq!(m.saved, 0);
    }

    #[test]
    fn a_saved_view_holds_its_buffer_once() {
        let mut g = chain();
        // `x` (an input), `b` and its view `c` are saved: `b`'s buffer counts, once.
        for i in [0, 2, 3] {
            g.nodes[i].saved = true;
        }
        let m = g.memory(&[("B", 8)]).expect("B is bound");
        assert_eq!(m.saved, 8 * 4 * 4);
    }

    #[test]
    fn unbound_symbols_are_errors() {
        let e = chain().memory(&[]).expect_err("B is not bound");
        assert!(e.to_string().contains("`B`"), "{e}");
        assert_eq!(
            dim_size(&Dim::Expr("B*784".into()), &[("B", 2)]).ok(),
            Some(1568)
        );
        assert!(dim_size(&Dim::Expr("B*B".into()), &[("B", usize::MAX)]).is_err());
    }
}
