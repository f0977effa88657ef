"""Warp's `warp.autograd`: Jacobians of a kernel, or of a Python function that launches kernels, by the tape and by
central differences, and the gradient checks built on them (`gradcheck`, `gradcheck_tape`).

Warp's signatures and results: `jacobian(...)` and `jacobian_fd(...)` return {(input index, output index): array}
for each pair of arrays with `requires_grad=True`, an array of shape (output scalars, input elements) whose dtype
is the input's (a vec3 input gives vec3 entries: entry [r, j] is d out_scalar[r] / d input[j], per component);
rows past `max_outputs_per_var` and columns past `max_inputs_per_var` (counted in input scalars) stay NaN. A
kernel's inputs are the arguments before its outputs. The tape Jacobian seeds one output scalar at a time
(`Tape.backward(grads=...)`); the finite-difference one launches the forward with the input scalar moved by -eps
and +eps and takes (right - left) / (2 eps) in the input's precision, as Warp does.

The project's own gradient check is `autodiff.gradcheck` (random output weights, precision-dependent tolerances);
this module is the Warp-compatible surface, for Warp programs run through `warp_shim`.
"""

from __future__ import annotations

import inspect
import itertools
from typing import Callable, Sequence

import numpy as np

import kernels as wp
from autodiff import Tape
from autodiff.tape_records import LaunchRecord

__all__ = ["FunctionMetadata", "gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd", "jacobian_plot"]

_NO_BACKWARD = "Kernel must have backward pass enabled to compute Jacobians"


class FunctionMetadata:
    """Labels, strides and dtypes of a kernel's or function's inputs and outputs (Warp's class of that name); the
    dtype and strides are None for an argument that is not an array."""

    def __init__(self, key=None, input_labels=None, output_labels=None, input_strides=None, output_strides=None,
                 input_dtypes=None, output_dtypes=None):
        self.key = key
        self.input_labels, self.output_labels = input_labels, output_labels
        self.input_strides, self.output_strides = input_strides, output_strides
        self.input_dtypes, self.output_dtypes = input_dtypes, output_dtypes

    @property
    def is_empty(self) -> bool:
        return self.key is None

    def input_is_array(self, i: int) -> bool:
        return self.input_dtypes[i] is not None

    def output_is_array(self, i: int) -> bool:
        return self.output_dtypes[i] is not None

    def update_from_kernel(self, kernel, inputs: Sequence) -> None:
        n = len(inputs)
        self.key = kernel.key
        self.input_labels, self.output_labels = list(kernel.arg_names[:n]), list(kernel.arg_names[n:])
        types_ = list(kernel.arg_types)
        self.input_strides, self.input_dtypes = [], []
        for t, value in zip(types_[:n], inputs):
            is_array = isinstance(value, wp.array) or _is_array_type(t)
            self.input_strides.append(getattr(value, "strides", None) if is_array else None)
            self.input_dtypes.append(getattr(value, "dtype", getattr(t, "dtype", None)) if is_array else None)
        self.output_strides = [None for _ in types_[n:]]
        self.output_dtypes = [getattr(t, "dtype", None) if _is_array_type(t) else None for t in types_[n:]]

    def update_from_function(self, function: Callable, inputs: Sequence, outputs=None) -> None:
        self.key = function.__name__
        self.input_labels = list(inspect.signature(function).parameters)
        if outputs is None:
            outputs = function(*inputs)
        outputs = _as_list(outputs)
        self.output_labels = [f"output_{i}" for i in range(len(outputs))]
        self.input_strides = [x.strides if isinstance(x, wp.array) else None for x in inputs]
        self.input_dtypes = [x.dtype if isinstance(x, wp.array) else None for x in inputs]
        self.output_strides = [y.strides if isinstance(y, wp.array) else None for y in outputs]
        self.output_dtypes = [y.dtype if isinstance(y, wp.array) else None for y in outputs]


def _is_array_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, wp.array) or hasattr(t, "dtype") and hasattr(t, "ndim")


def _as_list(outputs) -> list:
    return [outputs] if isinstance(outputs, wp.array) else list(outputs)


def _components(dtype) -> int:
    """Scalars per element of `dtype` (1 for a scalar, 3 for a vec3, 9 for a mat33)."""
    return int(np.prod(getattr(dtype, "_shape_", ()) or (1,)))


def _host(a) -> np.ndarray:
    """`a`'s values as a numpy array of shape (elements, scalars per element)."""
    return np.array(a.numpy()).reshape(a.size, _components(a.dtype))


def _set_host(a, values: np.ndarray) -> None:
    a.assign(values.reshape(a.numpy().shape))


def _nan_jacobian(rows: int, like) -> np.ndarray:
    return np.full((rows, like.size, _components(like.dtype)), np.nan, dtype=like.numpy().dtype)


def _to_array(jac: np.ndarray, like):
    shape = getattr(like.dtype, "_shape_", ())
    return wp.array(jac.reshape(jac.shape[0], jac.shape[1], *shape) if shape else jac[:, :, 0], dtype=like.dtype,
                    device=like.device)


def _snapshot(inputs: Sequence) -> list:
    return [np.array(x.numpy()) if isinstance(x, wp.array) else None for x in inputs]


def _restore(inputs: Sequence, snapshot: list) -> None:
    for x, saved in zip(inputs, snapshot):
        if saved is not None:
            x.assign(saved)


def _backward_enabled(kernel) -> bool:
    return bool(kernel.enable_backward)


def _device_of(values: Sequence):
    return next((v.device for v in values if isinstance(v, wp.array)), None)


def _resolve_mask(mask, metadata: FunctionMetadata, n_inputs: int) -> set:
    names = metadata.input_labels + metadata.output_labels

    def index(name, offset=0):
        return name if isinstance(name, int) else names.index(name) + offset

    return {(index(i), index(o, -n_inputs)) for i, o in (mask or [])}


def _pairs(inputs, outputs, mask: set):
    """The (input index, output index) pairs Warp computes: both arrays with gradients, and in `mask` if any."""
    for i, o in itertools.product(range(len(inputs)), range(len(outputs))):
        if mask and (i, o) not in mask:
            continue
        x, y = inputs[i], outputs[o]
        if isinstance(x, wp.array) and x.requires_grad and isinstance(y, wp.array) and y.requires_grad:
            yield i, o


def _record(function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, snapshot):
    """Run `function` once on a tape: a kernel's launch (its outputs put back afterwards, since Warp records the
    launch without running it), or the Python function (its inputs restored when `snapshot` is given)."""
    tape = Tape()
    if isinstance(function, wp.Kernel):
        if outputs is None or len(outputs) == 0:
            raise ValueError("A list of output arguments must be provided to compute kernel Jacobians")
        if metadata.is_empty:
            metadata.update_from_kernel(function, inputs)
        kept = _snapshot(outputs)
        with tape:
            wp.launch(function, dim=dim, inputs=list(inputs), outputs=list(outputs), device=device,
                      max_blocks=max_blocks, block_dim=block_dim)
        _restore(outputs, kept)
        return tape, list(outputs)
    try:
        with tape:
            outputs = _as_list(function(*inputs))
    except BaseException:
        if snapshot is not None:
            _restore(inputs, snapshot)
        raise
    return tape, outputs


def jacobian(function, dim=None, inputs=None, outputs=None, input_output_mask=None, device=None, max_blocks=0,
             block_dim=None, max_outputs_per_var=-1, plot_jacobians=False, metadata=None, restore_inputs=True):
    """Jacobians by the tape: {(input index, output index): array (output scalars, input elements)} (see the
    module docstring). `function`: a kernel (launched over `dim` with `inputs` then `outputs`) or a Python function
    of `inputs` returning an array or a list of arrays.

    Raises:
        ValueError: a kernel involved has its backward disabled; a kernel without `outputs`.
    """
    metadata = FunctionMetadata() if metadata is None else metadata
    inputs = list(inputs or [])
    is_kernel = isinstance(function, wp.Kernel)
    if is_kernel and not _backward_enabled(function):
        raise ValueError(_NO_BACKWARD)
    snapshot = _snapshot(inputs) if restore_inputs and not is_kernel else None
    tape, outputs = _record(function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, snapshot)
    try:
        for rec in tape.launches:
            if isinstance(rec, LaunchRecord) and not _backward_enabled(rec.kernel):
                raise ValueError(_NO_BACKWARD)
        if metadata.is_empty:
            metadata.update_from_function(function, inputs, outputs)
        mask = _resolve_mask(input_output_mask, metadata, len(inputs))
        jacobians = {}
        tape.zero()
        for i, o in _pairs(inputs, outputs, mask):
            x, y = inputs[i], outputs[o]
            rows = y.size * _components(y.dtype)
            jac = _nan_jacobian(rows, x)
            seed = np.zeros(rows, dtype=np.array(y.numpy()).dtype)
            for r in range(min(rows, max_outputs_per_var) if max_outputs_per_var > 0 else rows):
                seed[:] = 0
                seed[r] = 1
                tape.backward(grads={y: seed.reshape(y.numpy().shape)})
                jac[r] = _host(x.grad)
                tape.zero()
            jacobians[i, o] = _to_array(jac, x)
    finally:
        if snapshot is not None:
            _restore(inputs, snapshot)
    if plot_jacobians:
        jacobian_plot(jacobians, metadata)
    return jacobians


def jacobian_fd(function, dim=None, inputs=None, outputs=None, input_output_mask=None, device=None, max_blocks=0,
                block_dim=None, max_inputs_per_var=-1, eps: float = 1e-4, plot_jacobians=False, metadata=None,
                restore_inputs=True):
    """Jacobians by central differences, same keys and shapes as `jacobian`; only forward launches, so a kernel
    whose backward is disabled is fine. Each column: (f(x + eps e_j) - f(x - eps e_j)) / (2 eps) in the input's
    precision; a kernel's outputs are launched into copies of their values before the call (so kernels that
    accumulate into an output give the same columns), and its inputs are put back after each column."""
    metadata = FunctionMetadata() if metadata is None else metadata
    inputs = list(inputs or [])
    is_kernel = isinstance(function, wp.Kernel)
    snapshot = _snapshot(inputs) if restore_inputs and not is_kernel else None
    if is_kernel:
        if outputs is None or len(outputs) == 0:
            raise ValueError("A list of output arguments must be provided to compute kernel Jacobians")
        if metadata.is_empty:
            metadata.update_from_kernel(function, inputs)
        outputs = list(outputs)
    else:
        _, outputs = _record(function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, snapshot)
        try:
            if metadata.is_empty:
                metadata.update_from_function(function, inputs, outputs)
        finally:
            if snapshot is not None:
                _restore(inputs, snapshot)
    mask = _resolve_mask(input_output_mask, metadata, len(inputs))
    originals = _snapshot(outputs)

    def evaluate(o: int) -> np.ndarray:
        """Output `o` (flat scalars) at the inputs' current values."""
        if is_kernel:
            copies = [wp.array(saved, dtype=y.dtype, device=y.device) if saved is not None else y
                      for y, saved in zip(outputs, originals)]
            wp.launch(function, dim=dim, inputs=inputs, outputs=copies, device=device, max_blocks=max_blocks,
                      block_dim=block_dim)
            return _host(copies[o]).reshape(-1)
        try:
            result = _as_list(function(*inputs))[o]
        except BaseException:
            if snapshot is not None:
                _restore(inputs, snapshot)
            raise
        return _host(result).reshape(-1)

    jacobians = {}
    try:
        for i, o in _pairs(inputs, outputs, mask):
            x, y = inputs[i], outputs[o]
            x0 = _host(x)
            flat0 = x0.reshape(-1)
            scalar = flat0.dtype.type
            jac = _nan_jacobian(y.size * _components(y.dtype), x).reshape(-1, x.size * _components(x.dtype))
            columns = len(flat0) if max_inputs_per_var <= 0 else min(len(flat0), max_inputs_per_var)
            for j in range(columns):
                sides = []
                for step in (-eps, eps):
                    moved = flat0.copy()
                    moved[j] = moved[j] + scalar(step)
                    _set_host(x, moved)
                    sides.append(evaluate(o))
                    if snapshot is not None:
                        _restore(inputs, snapshot)
                    else:
                        _set_host(x, flat0)
                left, right = sides
                jac[:, j] = (right.astype(scalar) - left.astype(scalar)) / (scalar(2) * scalar(eps))
            jacobians[i, o] = _to_array(jac.reshape(jac.shape[0], x.size, -1), x)
    finally:
        if snapshot is not None:
            _restore(inputs, snapshot)
    if plot_jacobians:
        jacobian_plot(jacobians, metadata)
    return jacobians


def gradcheck(function, dim=None, inputs=None, outputs=None, *, eps: float = 1e-4, atol: float = 1e-3,
              rtol: float = 1e-2, raise_exception: bool = True, input_output_mask=None, device=None, max_blocks=0,
              block_dim=None, max_inputs_per_var=-1, max_outputs_per_var=-1, plot_relative_error=False,
              plot_absolute_error=False, show_summary: bool = True, restore_inputs: bool = True) -> bool:
    """Warp's gradient check: every tape Jacobian entry within `atol + rtol * |fd|` of the central-difference one
    and none NaN. Returns whether it passed; prints a table per pair with `show_summary`.

    Raises:
        ValueError: the check failed and `raise_exception` (Warp's message), or `inputs` is None.
    """
    if inputs is None:
        raise ValueError("The inputs argument must be provided")
    metadata = FunctionMetadata()
    common = dict(dim=dim, inputs=inputs, outputs=outputs, input_output_mask=input_output_mask, device=device,
                  max_blocks=max_blocks, block_dim=block_dim, restore_inputs=restore_inputs, metadata=metadata)
    jacs_ad = jacobian(function, max_outputs_per_var=max_outputs_per_var, **common)
    jacs_fd = jacobian_fd(function, max_inputs_per_var=max_inputs_per_var, eps=eps, **common)
    success, mismatch, has_nan, rows = True, False, False, []
    pair = (None, None)
    for pair, fd_array in jacs_fd.items():
        ad, fd = np.array(jacs_ad[pair].numpy()), np.array(fd_array.numpy())
        if max_outputs_per_var > 0:
            ad, fd = ad[:max_outputs_per_var], fd[:max_outputs_per_var]
        if max_inputs_per_var > 0:
            ad, fd = ad[:, :max_inputs_per_var], fd[:, :max_inputs_per_var]
        matches = bool(np.allclose(ad, fd, atol=atol, rtol=rtol))
        nan = bool(np.any(np.isnan(ad)))
        mismatch, has_nan = mismatch or not matches, has_nan or nan
        success = success and matches and not nan
        if show_summary:
            diff = np.abs(ad - fd)
            at = np.unravel_index(np.argmax(diff), ad.shape) if diff.size else ()
            rel = np.abs((ad - fd) / (fd + 1e-8)).max() if diff.size else 0.0
            verdict = "NaN" if nan else ("PASS" if matches else "FAIL")
            rows.append([metadata.input_labels[pair[0]], metadata.output_labels[pair[1]],
                         f"{diff.max() if diff.size else 0.0:.3e} at {tuple(int(k) for k in at)}",
                         f"{ad[at] if diff.size else 0.0:.3e}", f"{fd[at] if diff.size else 0.0:.3e}", f"{rel:.3e}",
                         verdict])
    if show_summary:
        _print_table(["Input", "Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error", "Pass"], rows)
        print(f"Gradient check for kernel {metadata.key} {'passed' if success else 'failed'}")
    if plot_relative_error or plot_absolute_error:
        errors = {}
        for key, fd_array in jacs_fd.items():
            ad, fd = np.array(jacs_ad[key].numpy()), np.array(fd_array.numpy())
            err = np.abs(ad - fd) / (np.abs(fd) + 1e-8) if plot_relative_error else np.abs(ad - fd)
            errors[key] = wp.array(err, dtype=fd_array.dtype)
        jacobian_plot(errors, metadata, title=f"{metadata.key} kernel Jacobian error")
    if raise_exception and mismatch:
        raise ValueError(f"Gradient check failed for kernel {metadata.key}, input {pair[0]}, output {pair[1]}: "
                         f"finite difference and autodiff gradients do not match")
    if raise_exception and has_nan:
        raise ValueError(f"Gradient check failed for kernel {metadata.key}, input {pair[0]}, output {pair[1]}: "
                         f"gradient contains NaN values")
    return success


def gradcheck_tape(tape, *, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True, input_output_masks=None,
                   blacklist_kernels=None, whitelist_kernels=None, max_inputs_per_var=-1, max_outputs_per_var=-1,
                   plot_relative_error=False, plot_absolute_error=False, show_summary: bool = True,
                   reverse_launches: bool = False, skip_to_launch_index: int = 0) -> bool:
    """`gradcheck` of each kernel launch recorded on `tape` (Python callbacks are skipped, as are kernels whose
    backward is disabled, those in `blacklist_kernels`, and those not in a non-empty `whitelist_kernels`; keys are
    kernel keys). Launches rerun with their recorded arguments, so an input a later launch overwrote is checked at
    its current value, as in Warp. Returns whether every check passed."""
    masks = input_output_masks or {}
    black, white = set(blacklist_kernels or ()), set(whitelist_kernels or ())
    launches = list(reversed(tape.launches)) if reverse_launches else list(tape.launches)
    ok = True
    for index, rec in enumerate(launches):
        if index < skip_to_launch_index or not isinstance(rec, LaunchRecord):
            continue
        kernel = rec.kernel
        if (white and kernel.key not in white) or kernel.key in black or not _backward_enabled(kernel):
            continue
        dim = rec.bounds.launch_dims
        ok = gradcheck(kernel, dim, list(rec.inputs), list(rec.outputs), eps=eps, atol=atol, rtol=rtol,
                       raise_exception=raise_exception, input_output_mask=masks.get(kernel.key),
                       device=rec.device, max_inputs_per_var=max_inputs_per_var,
                       max_outputs_per_var=max_outputs_per_var, plot_relative_error=plot_relative_error,
                       plot_absolute_error=plot_absolute_error, show_summary=show_summary) and ok
    return ok


def jacobian_plot(jacobians: dict, kernel, inputs=None, show_plot=True, show_colorbar=True,
                  scale_colors_per_submatrix=False, title=None, colormap="coolwarm", log_scale=False):
    """Plot each Jacobian as an image, one panel per (input, output) pair (needs matplotlib, as in Warp).
    Returns the matplotlib figure.

    Raises:
        ImportError: matplotlib is not installed.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("jacobian_plot needs matplotlib (pip install matplotlib)") from e
    metadata = kernel if isinstance(kernel, FunctionMetadata) else FunctionMetadata()
    if isinstance(kernel, wp.Kernel):
        metadata.update_from_kernel(kernel, inputs or [])
    fig, axes = plt.subplots(1, max(len(jacobians), 1), squeeze=False)
    panels = {}
    for key, jac in sorted(jacobians.items()):
        values = np.array(jac.numpy(), dtype=np.float64).reshape(jac.shape[0], -1)
        panels[key] = np.log10(np.abs(values) + 1e-30) if log_scale else values
    finite = [v[np.isfinite(v)] for v in panels.values()]
    finite = np.concatenate(finite) if finite else np.zeros(0)
    # one color scale for every panel unless asked per panel (Warp's scale_colors_per_submatrix)
    common = {} if scale_colors_per_submatrix or not finite.size else {"vmin": finite.min(), "vmax": finite.max()}
    for ax, ((i, o), values) in zip(axes[0], panels.items()):
        image = ax.imshow(values, cmap=colormap, interpolation="nearest", **common)
        labels = (metadata.input_labels, metadata.output_labels)
        if labels[0] and labels[1]:
            ax.set_xlabel(labels[0][i])
            ax.set_ylabel(labels[1][o])
        if show_colorbar:
            fig.colorbar(image, ax=ax)
    if title:
        fig.suptitle(title)
    if show_plot:
        plt.show()
    return fig


def _print_table(headers: list, rows: list) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)] if rows else [len(h) for h in headers]
    for line in [headers, *rows]:
        print(" | ".join(str(c).ljust(w) for c, w in zip(line, widths)))
