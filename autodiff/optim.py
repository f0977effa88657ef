"""Gradient-descent optimisers (`SGD`, `Adam`) that update toolkit arrays in place from their `.grad`.

The updates run as kernels on the parameters' device. Every parameter is updated through a flat view of its
scalars (a vec3 array of shape [n] is seen as 3n floats), so one kernel per scalar type (float32, float64) serves
every element type. Optimiser state (step count, moments) lives in arrays of the parameters' type and round-trips
through `state_dict()` / `load_state_dict()` as plain numpy arrays, so a resumed optimisation is bit-identical.
"""

import math

import numpy as np

import kernels as wp


# ------------------------------------------------------------------------------------------------ kernels


def _make_kernels(scalar, tag):
    """The update kernels for parameters made of `scalar` (wp.float32 or wp.float64) values."""

    def grad_sq_norm(g: wp.array(dtype=scalar), total: wp.array(dtype=wp.float64)):
        # float64 accumulation: the norm of a large float32 gradient would lose digits otherwise
        i = wp.tid()
        x = wp.float64(g[i])
        wp.atomic_add(total, 0, x * x)

    def sgd_step(p: wp.array(dtype=scalar), g: wp.array(dtype=scalar), lr: scalar, scale: scalar):
        i = wp.tid()
        p[i] = p[i] - lr * (g[i] * scale)

    def sgd_momentum_step(p: wp.array(dtype=scalar), g: wp.array(dtype=scalar), velocity: wp.array(dtype=scalar),
                          lr: scalar, momentum: scalar, dampening: scalar, weight_decay: scalar, nesterov: int,
                          first: int, scale: scalar):
        # PyTorch's (and Warp's) SGD, in Warp's order of operations: the first step takes the gradient as the
        # velocity, undamped
        i = wp.tid()
        gt = g[i] * scale
        if weight_decay != scalar(0.0):
            gt += weight_decay * p[i]
        b = gt
        if momentum != scalar(0.0):
            if first == 0:
                b = momentum * velocity[i] + (scalar(1.0) - dampening) * gt
            velocity[i] = b
            if nesterov == 1:
                b = gt + momentum * b
        p[i] = p[i] - lr * b

    def adam_step(p: wp.array(dtype=scalar), g: wp.array(dtype=scalar), m: wp.array(dtype=scalar),
                  v: wp.array(dtype=scalar), lr: scalar, beta1: scalar, beta2: scalar, eps: scalar, scale: scalar,
                  correction1: scalar, correction2: scalar):
        i = wp.tid()
        gi = g[i] * scale
        mi = beta1 * m[i] + (scalar(1.0) - beta1) * gi
        vi = beta2 * v[i] + (scalar(1.0) - beta2) * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] = p[i] - lr * (mi / correction1) / (wp.sqrt(vi / correction2) + eps)

    def clamp_values(p: wp.array(dtype=scalar), lower: scalar, upper: scalar):
        i = wp.tid()
        p[i] = wp.min(wp.max(p[i], lower), upper)

    fns = (grad_sq_norm, sgd_step, sgd_momentum_step, adam_step, clamp_values)
    out = {}
    for f in fns:
        name = f.__name__
        f.__name__ = f.__qualname__ = f"optim_{name}_{tag}"
        out[name] = wp.kernel(f, enable_backward=False)
    return out


_KERNELS = {wp.float32: _make_kernels(wp.float32, "f32"), wp.float64: _make_kernels(wp.float64, "f64")}


# ------------------------------------------------------------------------------------------------ helpers


def _scalar_type(a):
    s = wp.types.scalar_type(a.dtype)
    if s not in _KERNELS:
        raise TypeError(f"optimisers update float32 or float64 arrays, got elements of {wp.types.type_repr(a.dtype)}")
    return s


def _flat_view(a):
    """`a`'s memory as a 1-d array of its scalars (no copy): [n] vec3 -> [3n] float."""
    if not a.is_contiguous:
        raise ValueError("optimiser parameters (and their gradients) must be contiguous arrays")
    scalar = _scalar_type(a)
    if a.is_cuda:  # a view of the device memory, as the numpy view below is of host memory
        return a.view(scalar).flatten()
    view = wp.array(a.numpy().reshape(-1), dtype=scalar, copy=False, device=a.device)
    if a.size and view.ptr != a.ptr:  # a device whose .numpy() copies: updates would be lost
        raise NotImplementedError(f"optimisers cannot view arrays on {a.device} as flat scalars yet")
    return view


def _check_param(k, p):
    if not isinstance(p, wp.array):
        raise TypeError(f"parameter {k} is a {type(p).__name__}, expected a kernels array")
    _scalar_type(p)


def _check_grad(name, k, p, g):
    """`g`, the gradient given for parameter `p`, must be an array of p's type and shape."""
    if g is None:
        raise ValueError(f"parameter {k} has no gradient buffer: create it with requires_grad=True, or pass the "
                         f"gradients to step()")
    if g.dtype != p.dtype:
        raise TypeError(f"{name} gradient dtype must match parameter dtype {wp.types.type_repr(p.dtype)}, got "
                        f"{wp.types.type_repr(g.dtype)}")
    if tuple(g.shape) != tuple(p.shape):
        raise ValueError(f"{name} gradient shape must match parameter shape {tuple(p.shape)}, got {tuple(g.shape)}")


def _bounds_list(bounds, count):
    if bounds is None:
        return [None] * count
    bounds = list(bounds)
    if len(bounds) != count:
        raise ValueError(f"bounds has {len(bounds)} entries for {count} parameters")
    out = []
    for k, b in enumerate(bounds):
        if b is None:
            out.append(None)
            continue
        lower, upper = b
        lower = -math.inf if lower is None else float(lower)
        upper = math.inf if upper is None else float(upper)
        if not lower <= upper:
            raise ValueError(f"bounds of parameter {k}: lower {lower} exceeds upper {upper}")
        out.append((lower, upper))
    return out


# ------------------------------------------------------------------------------------------------ optimisers


class Optimizer:
    """Shared machinery: parameter views, the global gradient norm, clipping, bounds and the state dict.

    Args:
        params: arrays to optimise (float32 or float64 elements of any type: scalars, vectors, matrices...), each
            with a gradient buffer (`requires_grad=True`) unless the gradients are passed to `step()`. None: set
            them later with `set_params()` (Warp's signature).
        lr: learning rate (step size in parameter units per unit of gradient for SGD; per step for Adam).
        clip_grad_norm: if the L2 norm of all gradients together exceeds this, the update uses the gradients
            scaled down to this norm (`.grad` itself is left unchanged). None: no clipping.
        bounds: per parameter None or (lower, upper) (either may be None): values are clamped into it after
            every step.
    """

    _slots: tuple = ()  # names of the per-parameter state arrays of the subclass

    def __init__(self, params, lr: float, *, clip_grad_norm: float | None = None, bounds=None):
        if clip_grad_norm is not None and not clip_grad_norm > 0:
            raise ValueError(f"clip_grad_norm must be positive, got {clip_grad_norm}")
        self.lr = float(lr)
        self.clip_grad_norm = clip_grad_norm
        self._bounds_arg = bounds
        self.params = None
        self.state = {name: [] for name in self._slots}
        self.step_count = 0
        if params is not None:
            self.set_params(params)

    def set_params(self, params):
        """Optimise `params` from now on. State kept for a parameter that was already there (the same array
        object, or one of the same type and size that replaces it) is kept; new parameters start from zero."""
        params = list(params)
        for k, p in enumerate(params):
            _check_param(k, p)
        old = self.params or []
        self.bounds = _bounds_list(self._bounds_arg, len(params))
        views = [_flat_view(p) for p in params]
        state = {name: [] for name in self._slots}
        for k, (p, v) in enumerate(zip(params, views)):
            for name in self._slots:
                prev = self.state[name][k] if k < len(old) else None
                if prev is not None and prev.size == v.size and prev.dtype == v.dtype:
                    state[name].append(prev)  # Warp's set_params keeps compatible moment buffers
                else:
                    state[name].append(wp.zeros(v.size, dtype=v.dtype, device=v.device))
        self.params, self._views, self.state = params, views, state

    def reset_internal_state(self):
        """Zero the optimiser's state (moments, velocities) and its step count."""
        for arrays in self.state.values():
            for a in arrays:
                a.zero_()
        self.step_count = 0

    def _require_params(self):
        if self.params is None:
            raise RuntimeError(f"{type(self).__name__} parameters must be set before calling step(), got None")

    def _grad_views(self, grads=None):
        """Flat views of the gradients: `grads` (one per parameter) or, when None, the parameters' `.grad` (which
        may have been replaced since the last step)."""
        name = type(self).__name__
        if grads is not None:
            grads = list(grads)
            if len(grads) != len(self.params):
                raise ValueError(f"{name}.step got {len(grads)} gradients for {len(self.params)} parameters")
        else:
            grads = [p.grad for p in self.params]
        for k, (p, g) in enumerate(zip(self.params, grads)):
            _check_grad(name, k, p, g)
        return [_flat_view(g) for g in grads]

    def grad_norm(self, grads=None) -> float:
        """L2 norm of all the parameters' gradients together (`grads`, or the parameters' `.grad`)."""
        self._require_params()
        total = 0.0
        for g in self._grad_views(grads):
            acc = wp.zeros(1, dtype=wp.float64, device=g.device)
            if g.size:
                wp.launch(_KERNELS[g.dtype]["grad_sq_norm"], dim=g.size, inputs=[g, acc], device=g.device,
                          record_tape=False)
            total += float(acc.numpy()[0])
        return math.sqrt(total)

    def step(self, grad=None) -> float:
        """Update every parameter in place from its gradient: `grad` (a list with one array per parameter, as
        Warp's optimisers take it) or, when None, the parameters' `.grad`. Returns the global gradient norm
        before clipping. Raises FloatingPointError, leaving parameters and state unchanged, when a gradient is
        NaN or infinite."""
        self._require_params()
        grads = self._grad_views(grad)
        norm = self.grad_norm(grad)
        if not math.isfinite(norm):
            raise FloatingPointError(f"gradient norm is {norm}: a gradient holds NaN or inf; parameters unchanged")
        scale = 1.0
        if self.clip_grad_norm is not None and norm > self.clip_grad_norm:
            scale = self.clip_grad_norm / norm
        self.step_count += 1
        for k, (p, g) in enumerate(zip(self._views, grads)):
            if p.size:
                self._update(k, p, g, scale)
                self._clamp(k, p)
        return norm

    def _update(self, k, p, g, scale):
        raise NotImplementedError

    def _clamp(self, k, p):
        if self.bounds[k] is None:
            return
        lower, upper = self.bounds[k]
        wp.launch(_KERNELS[p.dtype]["clamp_values"], dim=p.size, inputs=[p, lower, upper], device=p.device,
                  record_tape=False)

    def zero_grad(self):
        """Zero every parameter's gradient."""
        for p in self.params or []:
            if p.grad is not None:
                p.grad.zero_()

    # -------------------------------------------------------------------------------------------- state dict

    def _hyperparameters(self) -> dict:
        return {"lr": self.lr, "clip_grad_norm": self.clip_grad_norm}

    def state_dict(self) -> dict:
        """Plain numpy arrays and numbers: kind, step count, hyperparameters, and per parameter the state arrays
        (copies, flat, in the parameters' scalar type)."""
        return {"kind": type(self).__name__, "step": self.step_count, **self._hyperparameters(),
                "state": {name: [a.numpy().copy() for a in arrays] for name, arrays in self.state.items()}}

    def load_state_dict(self, d: dict):
        """Restore what `state_dict()` returned, for the same parameters (checked: count, sizes, dtypes)."""
        if d.get("kind") != type(self).__name__:
            raise ValueError(f"state dict of a {d.get('kind')} optimiser, this is {type(self).__name__}")
        for name, arrays in self.state.items():
            saved = d["state"][name]
            if len(saved) != len(arrays):
                raise ValueError(f"state dict has '{name}' for {len(saved)} parameters, this optimiser has "
                                 f"{len(arrays)}")
            for k, (a, s) in enumerate(zip(arrays, saved)):
                s = np.asarray(s)
                if s.shape != (a.size,) or s.dtype != a.numpy().dtype:
                    raise ValueError(f"state dict '{name}' of parameter {k}: shape {s.shape} {s.dtype}, expected "
                                     f"({a.size},) {a.numpy().dtype}")
        for name, arrays in self.state.items():
            for a, s in zip(arrays, d["state"][name]):
                a.assign(np.asarray(s))
        self.step_count = int(d["step"])
        for key in self._hyperparameters():
            setattr(self, key, tuple(d[key]) if isinstance(d[key], list) else d[key])  # lists: from JSON, say


class SGD(Optimizer):
    """Stochastic gradient descent with PyTorch's (and Warp's) options: with d = g + weight_decay * p,
    b = d on the first step and b = momentum * b + (1 - dampening) * d after it, and p -= lr * u where u is
    d + momentum * b with Nesterov momentum, b with momentum, d without. See `Optimizer` for the other arguments.

    Args:
        momentum: momentum factor in [0, 1).
        dampening: dampening of the momentum, in [0, 1].
        weight_decay: L2 penalty coefficient (>= 0).
        nesterov: Nesterov momentum; needs momentum > 0 and dampening 0 (as in PyTorch).
    """

    def __init__(self, params=None, lr: float = 0.001, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, clip_grad_norm: float | None = None,
                 bounds=None):
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        if not 0.0 <= dampening <= 1.0:
            raise ValueError(f"dampening must be in [0, 1], got {dampening}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        if nesterov and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening 0")
        self._slots = ("velocity",) if momentum > 0.0 else ()
        super().__init__(params, lr, clip_grad_norm=clip_grad_norm, bounds=bounds)
        self.momentum = float(momentum)
        self.dampening = float(dampening)
        self.weight_decay = float(weight_decay)
        self.nesterov = bool(nesterov)

    @property
    def b(self) -> list:
        """Momentum buffers (Warp's name), one flat array of scalars per parameter; empty without momentum."""
        return self.state.get("velocity", [])

    @property
    def t(self) -> int:
        """Steps taken (Warp's name)."""
        return self.step_count

    def _hyperparameters(self) -> dict:
        return {**super()._hyperparameters(), "momentum": self.momentum, "dampening": self.dampening,
                "weight_decay": self.weight_decay, "nesterov": self.nesterov}

    def _update(self, k, p, g, scale):
        kernels = _KERNELS[p.dtype]
        if self.momentum > 0.0 or self.weight_decay > 0.0:
            velocity = self.state["velocity"][k] if self.momentum > 0.0 else p  # not read without momentum
            wp.launch(kernels["sgd_momentum_step"], dim=p.size,
                      inputs=[p, g, velocity, self.lr, self.momentum, self.dampening, self.weight_decay,
                              int(self.nesterov), int(self.step_count == 1), scale],
                      device=p.device, record_tape=False)
        else:
            wp.launch(kernels["sgd_step"], dim=p.size, inputs=[p, g, self.lr, scale], device=p.device,
                      record_tape=False)


class Adam(Optimizer):
    """Adam (Kingma and Ba, Algorithm 1): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, and
    p -= lr * m_hat / (sqrt(v_hat) + eps) with bias corrections m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t).
    See `Optimizer` for the other arguments."""

    _slots = ("m", "v")

    def __init__(self, params=None, lr: float = 0.001, betas=(0.9, 0.999), eps: float = 1e-8, *,
                 clip_grad_norm: float | None = None, bounds=None):
        beta1, beta2 = (float(b) for b in betas)
        if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        super().__init__(params, lr, clip_grad_norm=clip_grad_norm, bounds=bounds)
        self.betas = (beta1, beta2)
        self.eps = float(eps)

    @property
    def m(self) -> list:
        """First moments, one flat array of scalars per parameter."""
        return self.state["m"]

    @property
    def v(self) -> list:
        """Second moments, one flat array of scalars per parameter."""
        return self.state["v"]

    @property
    def t(self) -> int:
        """Steps taken (Warp's name)."""
        return self.step_count

    def _hyperparameters(self) -> dict:
        return {**super()._hyperparameters(), "betas": self.betas, "eps": self.eps}

    def _update(self, k, p, g, scale):
        # the bias corrections in the parameters' precision, as Warp's Adam computes them in its kernel (float32
        # parameters then step exactly as in Warp)
        real = np.float32 if p.dtype == wp.float32 else np.float64
        beta1, beta2 = (real(b) for b in self.betas)
        correction1 = float(real(1.0) - beta1 ** real(self.step_count))
        correction2 = float(real(1.0) - beta2 ** real(self.step_count))
        beta1, beta2 = float(beta1), float(beta2)
        wp.launch(_KERNELS[p.dtype]["adam_step"], dim=p.size,
                  inputs=[p, g, self.state["m"][k], self.state["v"][k], self.lr, beta1, beta2, self.eps, scale,
                          correction1, correction2], device=p.device, record_tape=False)
