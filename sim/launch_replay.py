"""Recorded launches replayed for repeated arguments: a step's small launches without the cost of checking and
packing their arguments each time (sim/self_contact.py, the displacement bound's kernels)."""

import kernels as wp


class ReplayedLaunch:
    """One kernel's launches outside any Tape, each recorded (`wp.launch(..., record_cmd=True)`) the first time
    its arguments come and replayed when the same ones come again: the bound's kernels run at every step of a
    solver whose state arrays alternate between two, and on the CPU `wp.launch` spends about as long checking
    and packing their dozen arguments as the kernel runs (limit_and_check: 42.6 us a launch, 30.7 us replayed,
    on the 64 x 64 cloth). Arguments are the same when every array is the same object and every other value
    equal. Up to `keep` recordings are kept (each holds its arrays, so no array's id is reused while its
    recording is kept); a new one beyond that clears them."""

    def __init__(self, kernel, device, keep: int = 4):
        self.kernel, self.device, self.keep = kernel, device, keep
        self._recorded = {}

    def launch(self, dim: int, inputs: list) -> None:
        key = (dim, *(id(v) if isinstance(v, wp.array) else v for v in inputs))
        cmd = self._recorded.get(key)
        if cmd is None:
            if len(self._recorded) >= self.keep:
                self._recorded.clear()
            cmd = wp.launch(self.kernel, dim=dim, inputs=inputs, device=self.device, record_tape=False,
                            record_cmd=True)
            self._recorded[key] = cmd
        cmd.launch()


class ReplayedSequence:
    """A fixed sequence of launches, fills and copies (made by a callable) captured once per argument set as a
    graph (kernels.runtime.capture: replayed from one native loop) and replayed: a search's five to twelve launches
    cost one host call instead of one each. Inside a step each host call costs some 30-60 us of Python, more than
    many of these kernels' work (docs/cloth_contact.md, session 26); a ReplayedLaunch still costs one a launch.

    `key` names the argument set: every array the sequence reads or writes (by id: the graphs hold their arrays,
    so no id is reused while its graph is kept) and every other value it passes. The callable must only launch
    work on the device, never read an array back (a capture records, it does not run). An argument set is
    captured the second time it comes (the first time the callable just runs): a caller that makes new arrays at
    every step (a new State each step) never repeats one, and capturing each would cost more than it saves
    (measured: 40 us a step of the 64 x 64 cloth). Up to `keep` graphs are kept; a new one beyond that clears
    them. A caller whose new arrays take the ids of freed ones (a new State made and dropped at every step) repeats
    keys without repeating its arrays: once more than 2 `keep` graphs were captured and fewer replays made than
    captures, the callable runs without capture from then on. On a GPU, or inside a capture of the caller's, the
    callable simply runs (a CUDA graph per search is not measured yet; a caller's capture records the launches
    itself)."""

    def __init__(self, device, keep: int = 8):
        self.device, self.keep = device, keep
        self._graphs = {}
        self._seen = set()  # keys that came once (ids only: an id reused by a new array costs one capture)
        self.captures = self.replays = 0

    def run(self, key: tuple, launches) -> None:
        if (not self.device.is_cpu or wp.is_capturing(self.device)
                or (self.captures > 2 * self.keep and self.replays < self.captures)):
            launches()
            return
        graph = self._graphs.get(key)
        if graph is not None:
            self.replays += 1
        else:
            if key not in self._seen:
                if len(self._seen) >= 4 * self.keep:
                    self._seen.clear()
                self._seen.add(key)
                launches()
                return
            if len(self._graphs) >= self.keep:
                self._graphs.clear()
            with wp.ScopedCapture(device=self.device) as capture:
                launches()
            graph = self._graphs[key] = capture.graph
            self.captures += 1
        wp.capture_launch(graph)
