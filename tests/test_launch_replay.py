"""Replayed launches and launch sequences (sim/launch_replay.py), with which self-contact runs its searches'
and its bound's launches: each call writes what its launches would, for the arrays and values passed now."""

import numpy as np

import kernels as wp


@wp.kernel
def scaled_into(a: wp.array(dtype=float), scale: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * scale


def test_a_replayed_launch_gives_what_a_launch_gives_for_the_arrays_and_values_passed_now():
    """ReplayedLaunch (the bound's kernels at every step) replays a recording only for the same arrays and equal
    values: with arrays alternating as a solver's states do, their contents changed between launches, a new
    scale, a new array and more argument sets than it keeps, each launch writes what wp.launch would."""
    from sim.launch_replay import ReplayedLaunch
    rng = np.random.default_rng(5)
    arrays = [wp.array(rng.normal(size=8).astype(np.float32), dtype=float) for _ in range(3)]
    outs = [wp.zeros(8, dtype=float) for _ in range(2)]
    replayed = ReplayedLaunch(scaled_into, wp.get_device("cpu"), keep=2)
    calls = [(0, 2.0, 0), (1, 2.0, 1), (0, 2.0, 0), (1, 2.0, 1), (0, 3.0, 0), (2, 3.0, 1), (1, 2.0, 0), (0, 2.0, 1)]
    for k, (a, scale, o) in enumerate(calls):
        arrays[a].assign(rng.normal(size=8).astype(np.float32))  # new contents, the same array
        replayed.launch(8, [arrays[a], scale, outs[o]])
        assert np.array_equal(outs[o].numpy(), arrays[a].numpy() * np.float32(scale)), f"call {k}"
        assert len(replayed._recorded) <= 2
    fresh = wp.array(rng.normal(size=8).astype(np.float32), dtype=float)
    replayed.launch(8, [fresh, 2.0, outs[0]])
    assert np.array_equal(outs[0].numpy(), fresh.numpy() * np.float32(2.0))


def test_a_replayed_sequence_gives_what_its_launches_give_for_each_argument_set():
    """ReplayedSequence (a search's or the bound's launches in one host call) replays a graph per key, captured
    when the key comes a second time: with arrays alternating as a solver's states do, their contents changed
    between calls, a new scale and more argument sets than it keeps, each call writes what its launches and
    fills would (the fill, recorded too, is made again); inside a capture of the caller's it records into that
    one, and a replay of the caller's graph does the same again."""
    from sim.launch_replay import ReplayedSequence
    rng = np.random.default_rng(6)
    arrays = [wp.array(rng.normal(size=8).astype(np.float32), dtype=float) for _ in range(3)]
    outs = [wp.zeros(8, dtype=float) for _ in range(2)]
    sums = wp.zeros(8, dtype=float)
    sequence = ReplayedSequence(wp.get_device("cpu"), keep=2)

    def launches(a, scale, o):
        sums.fill_(1.0)
        wp.launch(scaled_into, dim=8, inputs=[arrays[a], scale, outs[o]])
        wp.launch(scaled_into, dim=8, inputs=[outs[o], 2.0, sums])

    # an argument set is captured when it comes a second time (the first, the launches just run), replayed after
    calls = [(0, 2.0, 0), (1, 2.0, 0), (0, 2.0, 0), (1, 2.0, 0), (0, 2.0, 0), (1, 2.0, 1), (0, 3.0, 0), (2, 3.0, 1),
             (1, 2.0, 0), (0, 2.0, 1), (0, 2.0, 1)]
    for k, (a, scale, o) in enumerate(calls):
        arrays[a].assign(rng.normal(size=8).astype(np.float32))  # new contents, the same array
        sums.zero_()
        sequence.run((id(arrays[a]), scale, id(outs[o])), lambda: launches(a, scale, o))
        expected = arrays[a].numpy() * np.float32(scale)
        assert np.array_equal(outs[o].numpy(), expected), f"call {k}"
        assert np.array_equal(sums.numpy(), expected * np.float32(2.0)), f"call {k}"
        assert len(sequence._graphs) == (0 if k < 2 else 1 if k == 2 else len(sequence._graphs)) <= 2
    assert sequence._graphs  # some were kept
    with wp.ScopedCapture(device="cpu") as capture:
        sequence.run((id(arrays[2]), 5.0, id(outs[0])), lambda: launches(2, 5.0, 0))
    arrays[2].assign(rng.normal(size=8).astype(np.float32))
    outs[0].zero_()
    wp.capture_launch(capture.graph)
    assert np.array_equal(outs[0].numpy(), arrays[2].numpy() * np.float32(5.0))


def test_a_replayed_sequence_stops_capturing_for_a_caller_that_never_repeats_its_arrays():
    """A caller that makes new arrays at every call and drops the old (a new State each step): their ids come
    again while the arrays do not, so captured graphs are never replayed; after 2 `keep` captures without as many
    replays the sequence stops capturing, and every call still writes what its launch would."""
    from sim.launch_replay import ReplayedSequence
    rng = np.random.default_rng(7)
    sequence = ReplayedSequence(wp.get_device("cpu"), keep=2)
    for k in range(60):
        a = wp.array(rng.normal(size=8).astype(np.float32), dtype=float)
        out = wp.zeros(8, dtype=float)
        sequence.run((id(a), id(out)), lambda: wp.launch(scaled_into, dim=8, inputs=[a, 2.0, out]))
        assert np.array_equal(out.numpy(), a.numpy() * np.float32(2.0)), f"call {k}"
    # CPython gives a new array the address (the id) of one just freed: keys come again, graphs are captured
    # (holding their arrays, so never replayed for other ones), and capturing stops after 2 keep of them
    assert sequence.captures <= 2 * 2 + 1 and sequence.replays < sequence.captures
