"""Static estimate of the work one thread of a kernel does, in IR ops: the body's ops, a dynamic loop's body
counted LOOP_FACTOR times (its trip count is not known), a call costing its callee's estimate. The CPU launcher
uses it to decide when spreading a launch over threads pays for the threads' start-up (`parallel_threshold`)."""

from __future__ import annotations

from ..ir import Block, Function

LOOP_FACTOR = 8
BASE_WORK = 8  # ops of a trivial elementwise kernel (two loads, a multiply-add, a store): the reference cost


def estimate_work(fn: Function, _memo: dict | None = None) -> int:
    memo = {} if _memo is None else _memo
    if id(fn) not in memo:
        memo[id(fn)] = 0  # recursion is refused elsewhere; guard the walk anyway
        memo[id(fn)] = _block_work(fn.body, memo)
    return memo[id(fn)]


def _block_work(block: Block, memo: dict) -> int:
    total = 0
    for op in block.ops:
        total += 1
        callee = op.attrs.get("callee")
        if callee is not None:
            total += estimate_work(callee, memo)
        inner = sum(_block_work(r, memo) for r in op.regions)
        total += inner * LOOP_FACTOR if op.opcode in ("for", "while") else inner
    return total


def parallel_threshold(work: int, base_threshold: int, floor: int = 64) -> int:
    """Launch size from which a kernel of `work` ops per thread runs multithreaded: `base_threshold` (tuned for a
    trivial kernel) scaled down by how much more work each thread does, not below `floor`."""
    scale = max(work, BASE_WORK) / BASE_WORK
    return max(min(base_threshold, floor), min(base_threshold, int(base_threshold / scale)))
