//! Rematerialisation, what the backward pass keeps: the forward values it reads are either saved (their buffers held from the forward pass until the backward one is done) or recomputed there from values it keeps anyway, chosen by a minimum cut as PyTorch's AOTAutograd partitioner (`min_cut_rematerialization_partition`) does.
//!
//! The flow network has two vertices per forward node, `in` and `out`, joined by an edge of
//! the bytes it costs to keep that value until the backward pass (nothing for a parameter or
//! input, which is the caller's memory, for a rank-0 value and for a value the function keeps
//! to its end anyway); every data edge between forward nodes is infinite, as is an edge from
//! the source to every node that cannot be recomputed (anything but an elementwise op or a
//! view in the main region) and from every value a backward or update node reads to the sink.
//! A minimum cut is then a set of values to keep of least total bytes, and the forward nodes
//! cut off from the source are the ones the backward pass recomputes: cheap elementwise
//! producers and their elementwise chains back to values that are kept anyway.
//!
//! The recomputed nodes are copies of the forward ones (same op, same inputs, so the same
//! bits: the eager twin, which runs the graph as written, agrees bit for bit), placed right
//! before their first backward reader, with the backward role and a `recompute/` name. The
//! copies are kept only when fusion and the buffer plan of the new graph hold fewer bytes from
//! the forward pass into the backward one, and no more buffer bytes in all, than the old one.

use super::PassConfig;
use crate::ir::*;
use std::collections::VecDeque;

/// An infinite capacity (sums of a few of them stay below `u64::MAX`).
const INF: u64 = u64::MAX / 16;

/// The largest finite capacity: larger values weigh the same (a million nodes of it sum to
/// less than [`INF`], so no flow overflows).
const MAX_WEIGHT: u64 = 1 << 36;

/// Recomputes in the backward pass the forward values the minimum cut does not keep, when
/// that lowers the bytes held across the passes; returns whether the graph changed.
pub fn run(graph: &mut Graph, config: &PassConfig) -> bool {
    let roles = graph.roles();
    if !roles.contains(&Role::Backward) {
        return false;
    }
    let live = super::dce::live_nodes(graph);
    let recomputed = min_cut(graph, &roles, &live);
    if recomputed.iter().all(|r| !r) {
        return false;
    }
    let before = held(graph, config);
    let mut candidate = graph.clone();
    rematerialise(&mut candidate, &roles, &live, &recomputed);
    let after = held(&candidate, config);
    if after.across < before.across && after.buffers <= before.buffers {
        *graph = candidate;
        true
    } else {
        false
    }
}

/// Whether the backward pass may compute its own copy of `node`.
fn recomputable(node: &Node) -> bool {
    node.region == Region::Main
        && !node.poisoned
        && !node.shape.is_empty()
        && (node.op.is_elementwise() || node.op == Op::Reshape)
        && !matches!(node.op, Op::Input { .. } | Op::Const { .. })
}

/// The forward nodes the backward pass recomputes by a minimum cut (see the module's doc).
fn min_cut(graph: &Graph, roles: &[Role], live: &[bool]) -> Vec<bool> {
    let n = graph.nodes.len();
    let forward = |i: usize| live[i] && roles[i] == Role::Forward;
    let (source, sink) = (2 * n, 2 * n + 1);
    let mut net = Network::new(2 * n + 2);
    for (i, node) in graph.nodes.iter().enumerate() {
        if !forward(i) {
            continue;
        }
        let id = NodeId(i);
        let free = matches!(node.op, Op::Input { .. } | Op::Const { .. })
            || node.shape.is_empty()
            || graph.read_at_end(id);
        // One more than the bytes: among cuts of equal bytes, the one keeping fewer values.
        let weight = if free {
            0
        } else {
            node.nominal_bytes().min(MAX_WEIGHT) + 1
        };
        net.add(2 * i, 2 * i + 1, weight);
        if !recomputable(node) {
            net.add(source, 2 * i, INF);
        }
        for &x in &node.inputs {
            if forward(x.0) {
                net.add(2 * x.0 + 1, 2 * i, INF);
            }
        }
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        if live[i] && roles[i] != Role::Forward {
            for &x in &node.inputs {
                if forward(x.0) {
                    net.add(2 * x.0 + 1, sink, INF);
                }
            }
        }
    }
    let reachable = net.max_flow_cut(source, sink);
    // Recompute the nodes on the sink side that the backward pass reaches through such nodes.
    let mut recomputed = vec![false; n];
    let mut stack: Vec<NodeId> = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if live[i] && roles[i] != Role::Forward {
            stack.extend(node.inputs.iter().copied().filter(|x| forward(x.0)));
        }
    }
    while let Some(x) = stack.pop() {
        if reachable[2 * x.0] || recomputed[x.0] {
            continue;
        }
        recomputed[x.0] = true;
        stack.extend(
            graph
                .node(x)
                .inputs
                .iter()
                .copied()
                .filter(|y| forward(y.0)),
        );
    }
    recomputed
}

/// Copies each recomputed forward node for the backward pass and points the backward and
/// update nodes at the copies; each copy is placed before its first reader.
fn rematerialise(graph: &mut Graph, roles: &[Role], live: &[bool], recomputed: &[bool]) {
    let n = graph.nodes.len();
    let mut copy_of: Vec<Option<NodeId>> = vec![None; n];
    for i in 0..n {
        if !recomputed[i] {
            continue;
        }
        let mut node = graph.nodes[i].clone();
        node.inputs = node
            .inputs
            .iter()
            .map(|x| copy_of[x.0].unwrap_or(*x))
            .collect();
        node.role = Role::Backward;
        let base = node
            .name
            .clone()
            .unwrap_or_else(|| format!("{}_{i}", node.op.name()));
        node.name = Some(format!("recompute/{base}"));
        copy_of[i] = Some(graph.push(node));
    }
    for (i, &role) in roles.iter().enumerate() {
        if !live[i] || role == Role::Forward {
            continue;
        }
        for x in graph.nodes[i].inputs.iter_mut() {
            if let Some(c) = copy_of[x.0] {
                *x = c;
            }
        }
    }
    // Each copy goes before its first reader (copies were pushed operands first, so their
    // readers are found from the last copy back).
    let total = graph.nodes.len();
    let mut anchor: Vec<usize> = vec![usize::MAX; total];
    for i in 0..total {
        for &x in &graph.nodes[i].inputs {
            if x.0 >= n && i < n {
                anchor[x.0] = anchor[x.0].min(i);
            }
        }
    }
    for c in (n..total).rev() {
        let inputs = graph.nodes[c].inputs.clone();
        for x in inputs {
            if x.0 >= n {
                anchor[x.0] = anchor[x.0].min(anchor[c]);
            }
        }
    }
    let mut order: Vec<NodeId> = Vec::with_capacity(total);
    let mut placed = vec![false; total];
    for i in 0..n {
        for c in n..total {
            if anchor[c] == i && !placed[c] {
                placed[c] = true;
                order.push(NodeId(c));
            }
        }
        order.push(NodeId(i));
    }
    // A copy nothing reads (it cannot happen: each copy has a reader) goes last.
    order.extend((n..total).filter(|&c| !placed[c]).map(NodeId));
    graph.reorder(&order);
}

/// The bytes the buffer plan holds, at [`NOMINAL_SYMBOL`].
struct Held {
    /// Values written before the first backward group and read at or after it.
    across: u64,
    /// Every buffer at its largest value.
    buffers: u64,
}

fn held(graph: &Graph, config: &PassConfig) -> Held {
    let plan = crate::fuse::fuse(graph, config);
    let sched = crate::schedule::schedule(graph, &plan);
    let roles = graph.roles();
    let boundary = plan
        .groups
        .iter()
        .filter(|g| g.region == Region::Main)
        .find(|g| g.nodes.iter().any(|x| roles[x.0] != Role::Forward))
        .map_or(plan.groups.len(), |g| g.id);
    let mut across = 0;
    for g in plan.groups.iter().filter(|g| g.id < boundary) {
        let v = g.root;
        if sched.slot[v.0].is_none() || graph.read_at_end(v) {
            continue;
        }
        if sched.last_use[v.0].is_some_and(|e| e >= boundary) {
            across = graph.node(v).nominal_bytes().saturating_add(across);
        }
    }
    let buffers = sched
        .slots
        .iter()
        .map(|(_, vs)| {
            vs.iter()
                .map(|&v| graph.node(v).nominal_bytes())
                .max()
                .unwrap_or(0)
        })
        .fold(0u64, u64::saturating_add);
    Held { across, buffers }
}

/// A flow network with integer capacities (Dinic's algorithm).
struct Network {
    /// Per vertex, its edges' indices in `to` and `cap` (an edge and its reverse are `e ^ 1`).
    adj: Vec<Vec<usize>>,
    to: Vec<usize>,
    cap: Vec<u64>,
}

impl Network {
    fn new(vertices: usize) -> Network {
        Network {
            adj: vec![Vec::new(); vertices],
            to: Vec::new(),
            cap: Vec::new(),
        }
    }

    fn add(&mut self, from: usize, to: usize, cap: u64) {
        self.adj[from].push(self.to.len());
        self.to.push(to);
        self.cap.push(cap);
        self.adj[to].push(self.to.len());
        self.to.push(from);
        self.cap.push(0);
    }

    /// Saturates a maximum flow, then returns the source side of the minimum cut nearest
    /// the sink: every vertex that cannot reach the sink any more. Of cuts of equal bytes
    /// that one keeps the latest values, so the backward pass recomputes the least.
    fn max_flow_cut(&mut self, source: usize, sink: usize) -> Vec<bool> {
        loop {
            let level = self.levels(source);
            if level[sink].is_none() {
                break;
            }
            let mut next = vec![0usize; self.adj.len()];
            while self.push(source, sink, INF, &level, &mut next) > 0 {}
        }
        // Backwards from the sink over edges with capacity left.
        let mut reaches = vec![false; self.adj.len()];
        reaches[sink] = true;
        let mut queue = VecDeque::from([sink]);
        while let Some(v) = queue.pop_front() {
            for &e in &self.adj[v] {
                // `e ^ 1` runs from `to[e]` into `v`.
                let u = self.to[e];
                if self.cap[e ^ 1] > 0 && !reaches[u] {
                    reaches[u] = true;
                    queue.push_back(u);
                }
            }
        }
        reaches.iter().map(|r| !r).collect()
    }

    /// Breadth-first levels over edges with capacity left.
    fn levels(&self, source: usize) -> Vec<Option<usize>> {
        let mut level = vec![None; self.adj.len()];
        level[source] = Some(0);
        let mut queue = VecDeque::from([source]);
        while let Some(u) = queue.pop_front() {
            for &e in &self.adj[u] {
                let v = self.to[e];
                if self.cap[e] > 0 && level[v].is_none() {
                    level[v] = level[u].map(|l| l + 1);
                    queue.push_back(v);
                }
            }
        }
        level
    }

    /// One augmenting path along increasing levels (iterative, so deep graphs do not
    /// recurse); returns the flow it carried.
    fn push(
        &mut self,
        source: usize,
        sink: usize,
        limit: u64,
        level: &[Option<usize>],
        next: &mut [usize],
    ) -> u64 {
        let mut path: Vec<usize> = Vec::new();
        let mut u = source;
        loop {
            if u == sink {
                let flow = path.iter().map(|&e| self.cap[e]).min().unwrap_or(limit);
                for &e in &path {
                    self.cap[e] -= flow;
                    self.cap[e ^ 1] += flow;
                }
                return flow;
            }
            let mut advanced = false;
            while next[u] < self.adj[u].len() {
                let e = self.adj[u][next[u]];
                let v = self.to[e];
                let deeper = match (level[u], level[v]) {
                    (Some(a), Some(b)) => b == a + 1,
                    _ => false,
                };
                if self.cap[e] > 0 && deeper {
                    path.push(e);
                    u = v;
                    advanced = true;
                    break;
                }
                next[u] += 1;
            }
            if !advanced {
                // A dead end: retreat one edge and skip it from now on.
                match path.pop() {
                    Some(e) => {
                        u = self.to[e ^ 1];
                        next[u] += 1;
                    }
                    None => return 0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
