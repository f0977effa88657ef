"""tile_reshape of a subscripted tile view: Warp 1.19 refuses a view whose strides are not the dense strides of its
shape ("tile_reshape() requires a contiguous tile"), since its reshape would reinterpret the parent's storage.

The same selections are refused here, with Warp's message and strides (measured on real Warp 1.19's CPU: of
t[1:3, :], t[::2, :], t[:, 1:3], t[2], t[:, 0], t[::-1], t[1:2, :], t[:, 2:3] of a 4 x 6 tile it reshapes the
first, fourth and seventh and refuses the rest). The accepted ones give numpy's values and gradients by central
differences."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

_SELECTIONS = {"t[1:3, :]": None, "t[::2, :]": "(2, 6) and strides (12, 1)", "t[:, 1:3]": "(4, 2) and strides (6, 1)",
               "t[2]": None, "t[:, 0]": "(4,) and strides (6,)", "t[::-1]": "(4, 6) and strides (-6, 1)",
               "t[1:2, :]": None, "t[:, 2:3]": "(4, 1) and strides (6, 1)"}


def _kernel(selection, tmp_path, name):
    # one module per selection, as a Warp test declares them (a refused kernel would stop its whole module)
    path = tmp_path / f"{name}.py"
    path.write_text(f"""import kernels as wp


@wp.kernel
def k(src: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    t = wp.tile_load(src, shape=(4, 6))
    v = {selection}
    wp.tile_store(out, wp.tile_reshape(v, shape=-1) * wp.tile_reshape(v, shape=-1))
""")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


@pytest.mark.parametrize("index, selection", list(enumerate(_SELECTIONS)))
def test_contiguous_views_reshape_and_strided_ones_are_refused(index, selection, tmp_path):
    kernel = _kernel(selection, tmp_path, f"tile_reshape_view_{index}")
    a = np.linspace(-1.0, 2.0, 24).reshape(4, 6)
    picked = eval(selection.replace("t", "a"))  # noqa: S307  (numpy's reading of the same subscript)
    out = wp.zeros(picked.size, dtype=wp.float64, requires_grad=True)
    refused = _SELECTIONS[selection]
    if refused:
        with pytest.raises(ValueError, match=rf"requires a contiguous tile; a tile view with shape "
                                             rf"{refused.replace('(', '[(]').replace(')', '[)]')}"):
            wp.launch_tiled(kernel, [1], [wp.array(a, dtype=wp.float64), out], block_dim=1)
        return
    wp.launch_tiled(kernel, [1], [wp.array(a, dtype=wp.float64), out], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), picked.ravel() ** 2)

    def run(x):
        y = wp.zeros(picked.size, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(kernel, [1], [x, y], block_dim=1)
        return y

    gradcheck(run, [wp.array(a, dtype=wp.float64, requires_grad=True)])
