"""`Tape.visualize`: the recorded launches as GraphViz DOT source (launches, the arrays they read and write,
and the tape's named scopes as clusters). Only text is produced; rendering it needs GraphViz, which we do not use.
"""

from __future__ import annotations

import kernels as wp


def _label_of(entry) -> str:
    kernel = getattr(entry, "kernel", None)
    if kernel is not None:
        return kernel.name
    if hasattr(entry, "dest"):
        return "copy"
    return "record_func"


def _arrays_of(entry) -> tuple:
    """(read arrays, written arrays) of a recorded entry; launch outputs count as written."""
    if hasattr(entry, "dest"):
        return [entry.src], [entry.dest]
    if not hasattr(entry, "kernel"):
        return [], []
    ins = [a for a in entry.inputs if isinstance(a, wp.array)]
    outs = [a for a in entry.outputs if isinstance(a, wp.array)]
    return ins, outs


def _groups(launches, simplify: bool) -> list:
    """[(first index, count, entry)]: with `simplify`, consecutive launches of one kernel on the same arguments
    become one group."""
    groups = []
    for k, entry in enumerate(launches):
        if simplify and groups:
            first, count, prev = groups[-1]
            same = _label_of(prev) == _label_of(entry) and [id(a) for a in sum(_arrays_of(prev), [])] == \
                [id(a) for a in sum(_arrays_of(entry), [])]
            if same:
                groups[-1] = (first, count + 1, prev)
                continue
        groups.append((k, 1, entry))
    return groups


def _escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def to_dot(tape, *, simplify_graph: bool = True, array_labels: dict | None = None, ignore_graph_scopes=False,
           graph_direction: str = "LR") -> str:
    """DOT source of `tape`'s record. `array_labels` maps arrays to names shown on their nodes."""
    labels = {id(a): name for a, name in (array_labels or {}).items()}
    lines = ["digraph tape {", f"  rankdir={graph_direction};", "  node [shape=box, fontname=Helvetica];"]
    arrays: dict = {}

    def array_node(a) -> str:
        if id(a) not in arrays:
            arrays[id(a)] = f"a{len(arrays)}"
            name = labels.get(id(a), f"array {wp.types.type_repr(a.dtype)} {tuple(a.shape)}")
            tip = f"array: dtype={wp.types.type_repr(a.dtype)}, shape={tuple(a.shape)}"
            lines.append(f'  {arrays[id(a)]} [label="{_escape(name)}", tooltip="{_escape(tip)}", shape=ellipse];')
        return arrays[id(a)]

    # scope markers as events at launch indices: begin (name) or end (None)
    events = [] if ignore_graph_scopes else list(tape.scopes)
    depth = 1
    edges = []
    for g, (first, count, entry) in enumerate(_groups(tape.launches, simplify_graph)):
        while events and events[0][0] <= first:
            _, name, _ = events.pop(0)
            if name is None:
                depth -= 1
                lines.append("  " * depth + "}")
            else:
                lines.append("  " * depth + f"subgraph cluster_{g}_{depth} {{")
                depth += 1
                lines.append("  " * depth + f'label="{_escape(name)}";')
        label = _label_of(entry) + (f" (repeated {count}x)" if count > 1 else "")
        lines.append("  " * depth + f'k{g} [label="{_escape(label)}"];')
        reads, writes = _arrays_of(entry)
        edges += [(a, f"k{g}", True) for a in reads] + [(a, f"k{g}", False) for a in writes]
    for _, name, _ in events:
        if name is None and depth > 1:
            depth -= 1
            lines.append("  " * depth + "}")
    for a, node, read in edges:
        lines.append(f"  {array_node(a)} -> {node};" if read else f"  {node} -> {array_node(a)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
