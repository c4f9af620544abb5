"""Checks a grafo TensorBoard event file with TensorBoard's own readers.

Usage: check_tensorboard.py EVENT_FILE EXPECTED_JSON

EXPECTED_JSON is a file or an inline JSON object:
    {"nodes": {"NAME": {"op": "matmul", "shape": ["B", 10], "inputs": ["x", "w"],
                        "attrs": {"line": 7}}, ...},
     "node_count": 5}
for a graph (the file must hold one graph_def), or
    {"scalars": {"TAG": [[STEP, VALUE], ...], ...}}
for scalar summaries (each tag's points, in order, as the Scalars tab's readers give them).
A graph's expectation may also hold "roles": {"forward": N, "backward": N, "update": N}
(how many nodes carry each `_role` attribute; every node must carry one), "saved": N (how
many carry `_saved = true`) and "scopes": {"PREFIX": N} (how many node names start with
PREFIX, the boxes the Graphs tab draws). A dim given as a string is a symbolic dim: size -1
named by it. Every key but "op" is optional. Exits 0 when the file matches, 1 with one line per difference otherwise.
"""

import json
import math
import os
import sys

from tensorboard.backend import process_graph
from tensorboard.backend.event_processing import (
    event_accumulator,
    event_file_loader,
    plugin_event_accumulator,
)
from tensorboard.compat.proto import graph_pb2
from tensorboard.util import tensor_util


def load_expected(arg):
    if os.path.exists(arg):
        with open(arg, encoding="utf-8") as f:
            return json.load(f)
    return json.loads(arg)


def dims_of(shape):
    return [d.name if d.size == -1 and d.name else d.size for d in shape.dim]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, expected = argv[1], load_expected(argv[2])
    problems = []

    # The low-level reader: every record (CRC-checked by TensorBoard) as an Event.
    events = list(event_file_loader.EventFileLoader(path).Load())
    if not events:
        return report(["no events read"])
    if events[0].file_version != "brain.Event:2":
        problems.append(f"first event's file_version is {events[0].file_version!r}")
    if "scalars" in expected:
        problems += check_scalars(path, expected["scalars"])
        if "nodes" not in expected and "node_count" not in expected:
            return report(problems)
    graph_events = [e for e in events if e.HasField("graph_def")]
    if len(graph_events) != 1:
        problems.append(f"expected one graph_def event, found {len(graph_events)}")
        return report(problems)
    graph = graph_pb2.GraphDef.FromString(graph_events[0].graph_def)

    # The reader behind the Graphs tab must give the same graph.
    acc = event_accumulator.EventAccumulator(path)
    acc.Reload()
    if acc.Graph() != graph:
        problems.append("EventAccumulator.Graph() differs from the graph_def event")

    # The Graphs tab's own preparation step must accept it.
    process_graph.prepare_graph_for_ui(graph_pb2.GraphDef.FromString(graph.SerializeToString()))

    nodes = {n.name: n for n in graph.node}
    if len(nodes) != len(graph.node):
        problems.append("node names are not unique")
    if "node_count" in expected and len(graph.node) != expected["node_count"]:
        problems.append(f"expected {expected['node_count']} nodes, found {len(graph.node)}")
    problems += check_roles(graph, expected)
    for name, want in expected.get("nodes", {}).items():
        node = nodes.get(name)
        if node is None:
            problems.append(f"node {name!r} missing; nodes are {sorted(nodes)}")
            continue
        if "op" in want and node.op != want["op"]:
            problems.append(f"{name}: op is {node.op!r}, expected {want['op']!r}")
        if "shape" in want:
            shapes = node.attr["_output_shapes"].list.shape
            found = [dims_of(s) for s in shapes]
            if found != [want["shape"]]:
                problems.append(f"{name}: _output_shapes is {found}, expected {[want['shape']]}")
        if "inputs" in want and list(node.input) != want["inputs"]:
            problems.append(f"{name}: inputs are {list(node.input)}, expected {want['inputs']}")
        if "dtype" in want and node.attr["T"].type != want["dtype"]:
            problems.append(f"{name}: T is {node.attr['T'].type}, expected {want['dtype']}")
        for key, value in want.get("attrs", {}).items():
            attr = node.attr.get(key)
            found = None
            if attr is not None:
                kind = attr.WhichOneof("value")
                found = getattr(attr, kind) if kind else None
                if isinstance(found, bytes):
                    found = found.decode("utf-8")
            if found != value:
                problems.append(f"{name}: attr {key!r} is {found!r}, expected {value!r}")
    return report(problems)


def check_roles(graph, expected):
    """Compares the nodes' `_role`/`_saved` attributes and name scopes with `expected`."""
    problems = []
    if "roles" in expected:
        counts = {}
        for node in graph.node:
            attr = node.attr.get("_role")
            if attr is None or attr.WhichOneof("value") != "s":
                problems.append(f"{node.name}: no string _role attribute")
                continue
            role = attr.s.decode("utf-8")
            counts[role] = counts.get(role, 0) + 1
        if counts != expected["roles"]:
            problems.append(f"_role counts are {counts}, expected {expected['roles']}")
    if "saved" in expected:
        saved = sum(1 for n in graph.node if "_saved" in n.attr and n.attr["_saved"].b)
        if saved != expected["saved"]:
            problems.append(f"{saved} nodes are _saved, expected {expected['saved']}")
    for prefix, want in expected.get("scopes", {}).items():
        found = sum(1 for n in graph.node if n.name.startswith(prefix))
        if found != want:
            problems.append(f"{found} node names start with {prefix!r}, expected {want}")
    return problems


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * abs(b)


def check_scalars(path, want):
    problems = []
    # The classic reader (simple_value as ScalarEvent) and the one the TensorBoard server
    # runs, which migrates simple_value to a rank-0 tensor of the "scalars" plugin.
    acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    plugin = plugin_event_accumulator.EventAccumulator(
        path, size_guidance={plugin_event_accumulator.TENSORS: 0}
    )
    plugin.Reload()
    plugin_tags = plugin.PluginTagToContent("scalars")
    if sorted(tags) != sorted(want):
        problems.append(f"scalar tags are {sorted(tags)}, expected {sorted(want)}")
    if sorted(plugin_tags) != sorted(want):
        problems.append(f"the scalars plugin's tags are {sorted(plugin_tags)}, expected {sorted(want)}")
    for tag, points in want.items():
        if tag not in tags or tag not in plugin_tags:
            continue
        found = [(e.step, e.value) for e in acc.Scalars(tag)]
        as_tensors = [
            (e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in plugin.Tensors(tag)
        ]
        for reader, got in (("Scalars", found), ("Tensors", as_tensors)):
            ok = len(got) == len(points) and all(
                s == ws and same(v, wv) for (s, v), (ws, wv) in zip(got, points)
            )
            if not ok:
                problems.append(f"{tag}: {reader}() gives {got}, expected {points}")
    return problems


def report(problems):
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
