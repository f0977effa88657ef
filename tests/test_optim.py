"""Optimisers (autodiff.optim): SGD and Adam against numpy implementations of the textbook update rules on a
quadratic, gradient-norm clipping, bounds, vector-valued parameters, and bit-identical resume from a state dict."""

import math

import numpy as np
import pytest

import kernels as wp
from autodiff import SGD, Adam, Tape

SCALARS = {"float32": (wp.float32, np.float32), "float64": (wp.float64, np.float64)}
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}

# quadratic loss 0.5 * sum(CURVATURE * (p - CENTRE)^2) over 6 values
CURVATURE = np.array([1.0, 2.0, 0.5, 4.0, 3.0, 1.5])
CENTRE = np.array([0.3, -1.2, 2.0, 0.7, -0.4, 1.1])
START = np.array([1.0, 1.0, -1.0, -2.0, 0.5, 3.0])


def quadratic_grad(p):
    return CURVATURE[: p.size] * (p - CENTRE[: p.size])


def sgd_reference(p, lr, momentum, steps, dampening=0.0, weight_decay=0.0, nesterov=False):
    """PyTorch's SGD update rule (torch.optim.SGD's documented algorithm), which Warp's SGD follows."""
    p, velocity = p.astype(np.float64).copy(), np.zeros(p.size)
    for t in range(steps):
        g = quadratic_grad(p) + weight_decay * p
        if momentum:
            velocity = g if t == 0 else momentum * velocity + (1.0 - dampening) * g
            g = g + momentum * velocity if nesterov else velocity
        p = p - lr * g
    return p


def adam_reference(p, lr, betas, eps, steps, clip=None):
    p, m, v = p.astype(np.float64).copy(), np.zeros(p.size), np.zeros(p.size)
    for t in range(1, steps + 1):
        g = quadratic_grad(p)
        norm = np.linalg.norm(g)
        if clip is not None and norm > clip:
            g = g * (clip / norm)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        p = p - lr * (m / (1 - betas[0] ** t)) / (np.sqrt(v / (1 - betas[1] ** t)) + eps)
    return p


def set_quadratic_grad(param):
    """Gradient of the quadratic at the parameter's current value, written into `.grad`."""
    flat = param.numpy().reshape(-1).astype(np.float64)
    param.grad.assign(quadratic_grad(flat).astype(param.numpy().dtype).reshape(param.numpy().shape))


def run(opt, param, steps):
    norms = []
    for _ in range(steps):
        set_quadratic_grad(param)
        norms.append(opt.step())
    return norms


@pytest.mark.parametrize("precision", SCALARS)
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_matches_numpy_reference(device, precision, momentum):
    dtype, np_dtype = SCALARS[precision]
    p = wp.array(START.astype(np_dtype), dtype=dtype, device=device, requires_grad=True)
    norms = run(SGD([p], 0.1, momentum=momentum), p, 5)
    np.testing.assert_allclose(p.numpy(), sgd_reference(START, 0.1, momentum, 5), **TOL[precision])
    assert norms[0] == pytest.approx(np.linalg.norm(quadratic_grad(START)), rel=1e-6)


@pytest.mark.parametrize("precision", SCALARS)
@pytest.mark.parametrize("options", [dict(momentum=0.8, dampening=0.3), dict(weight_decay=0.2),
                                     dict(momentum=0.7, dampening=0.1, weight_decay=0.05),
                                     dict(momentum=0.9, nesterov=True, weight_decay=0.1)],
                         ids=["dampening", "weight_decay", "all_but_nesterov", "nesterov"])
def test_sgd_options_match_pytorch_rule(device, precision, options):
    # Warp's SGD arguments (dampening, weight_decay, nesterov): the first step takes the undamped gradient
    dtype, np_dtype = SCALARS[precision]
    p = wp.array(START.astype(np_dtype), dtype=dtype, device=device, requires_grad=True)
    opt = SGD([p], 0.1, **options)
    run(opt, p, 6)
    np.testing.assert_allclose(p.numpy(), sgd_reference(START, 0.1, steps=6, **{"momentum": 0.0, **options}),
                               **TOL[precision])
    assert opt.t == 6
    opt.reset_internal_state()  # the next step is a first step again
    q = START.astype(np_dtype)
    p.assign(q)
    run(opt, p, 2)
    np.testing.assert_allclose(p.numpy(), sgd_reference(START, 0.1, steps=2, **{"momentum": 0.0, **options}),
                               **TOL[precision])


def test_sgd_refuses_bad_options():
    p = wp.zeros(3, dtype=float, requires_grad=True)
    with pytest.raises(ValueError, match="Nesterov momentum needs momentum > 0 and dampening 0"):
        SGD([p], 0.1, momentum=0.9, dampening=0.5, nesterov=True)
    with pytest.raises(ValueError, match="dampening must be in"):
        SGD([p], 0.1, momentum=0.9, dampening=1.5)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        SGD([p], 0.1, weight_decay=-1.0)


@pytest.mark.parametrize("precision", SCALARS)
def test_adam_matches_numpy_reference(device, precision):
    dtype, np_dtype = SCALARS[precision]
    p = wp.array(START.astype(np_dtype), dtype=dtype, device=device, requires_grad=True)
    run(Adam([p], 0.05, betas=(0.8, 0.99), eps=1e-6), p, 6)
    np.testing.assert_allclose(p.numpy(), adam_reference(START, 0.05, (0.8, 0.99), 1e-6, 6), **TOL[precision])


@pytest.mark.parametrize("precision", SCALARS)
def test_vector_parameters_update_like_their_scalars(device, precision):
    dtype, np_dtype = SCALARS[precision]
    vec3 = wp.types.vector(3, dtype)
    p = wp.array(START.astype(np_dtype).reshape(2, 3), dtype=vec3, device=device, requires_grad=True)
    run(Adam([p], 0.05), p, 4)
    expected = adam_reference(START, 0.05, (0.9, 0.999), 1e-8, 4).reshape(2, 3)
    np.testing.assert_allclose(p.numpy(), expected, **TOL[precision])
    assert p.dtype is vec3 and p.shape == (2,)


def test_matrix_and_two_dimensional_parameters(device):
    m = wp.array(np.arange(8, dtype=np.float32).reshape(2, 2, 2), dtype=wp.mat22, device=device, requires_grad=True)
    t = wp.array(np.ones((2, 3), np.float32), dtype=float, device=device, requires_grad=True)
    m.grad.fill_(wp.mat22(1.0, 2.0, 3.0, 4.0))
    t.grad.assign(np.full((2, 3), -2.0, np.float32))
    SGD([m, t], 0.5).step()
    np.testing.assert_allclose(m.numpy(), np.arange(8).reshape(2, 2, 2) - 0.5 * np.tile([[1, 2], [3, 4]], (2, 1, 1)))
    np.testing.assert_allclose(t.numpy(), np.full((2, 3), 2.0))


def test_clipping_scales_the_update_not_the_gradient(device):
    a = wp.array(np.zeros(2, np.float32), device=device, requires_grad=True)
    b = wp.array(np.zeros(1, np.float64), dtype=wp.float64, device=device, requires_grad=True)
    a.grad.assign(np.array([3.0, 0.0], np.float32))
    b.grad.assign(np.array([4.0]))
    opt = SGD([a, b], 1.0, clip_grad_norm=2.5)
    assert opt.step() == pytest.approx(5.0)  # the norm over both parameters, before clipping
    np.testing.assert_allclose(a.numpy(), [-1.5, 0.0], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [-2.0], rtol=1e-12)
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 0.0])
    opt.clip_grad_norm = 10.0  # above the norm: no clipping
    opt.step()
    np.testing.assert_allclose(a.numpy(), [-4.5, 0.0], rtol=1e-6)


def test_clipped_adam_matches_reference(device):
    p = wp.array(START, dtype=wp.float64, device=device, requires_grad=True)
    run(Adam([p], 0.1, clip_grad_norm=0.5), p, 5)
    np.testing.assert_allclose(p.numpy(), adam_reference(START, 0.1, (0.9, 0.999), 1e-8, 5, clip=0.5), rtol=1e-12)


def test_bounds_clamp_after_every_step(device):
    p = wp.array(np.array([0.0, 0.0, 0.0], np.float32), device=device, requires_grad=True)
    q = wp.array(np.array([0.0, 0.0], np.float32), device=device, requires_grad=True)
    free = wp.array(np.array([0.0], np.float32), device=device, requires_grad=True)
    opt = SGD([p, q, free], 1.0, bounds=[(-0.5, 0.25), (None, 0.1), None])
    for _ in range(3):
        p.grad.assign(np.array([-1.0, 1.0, 0.1], np.float32))  # pushes up, down, a little down
        q.grad.assign(np.array([-1.0, 1.0], np.float32))
        free.grad.assign(np.array([-1.0], np.float32))
        opt.step()
    np.testing.assert_allclose(p.numpy(), [0.25, -0.5, -0.3], rtol=1e-6)
    np.testing.assert_allclose(q.numpy(), [0.1, -3.0], rtol=1e-6)
    np.testing.assert_allclose(free.numpy(), [3.0])


@pytest.mark.parametrize("make", [lambda ps: Adam(ps, 0.05, clip_grad_norm=3.0),
                                  lambda ps: SGD(ps, 0.02, momentum=0.8)], ids=["adam", "sgd_momentum"])
def test_state_dict_resumes_bit_identically(device, make):
    p = wp.array(START.astype(np.float32).reshape(2, 3), dtype=wp.vec3, device=device, requires_grad=True)
    opt = make([p])
    run(opt, p, 3)
    saved, saved_p = opt.state_dict(), p.numpy().copy()
    for value in saved.values():  # plain data only: numbers, strings, tuples, numpy arrays
        assert isinstance(value, (int, float, str, tuple, dict, type(None)))
    run(opt, p, 4)
    uninterrupted = p.numpy().copy()

    resumed = wp.array(saved_p, dtype=wp.vec3, device=device, requires_grad=True)
    opt2 = make([resumed])
    opt2.load_state_dict(saved)
    assert opt2.step_count == 3
    run(opt2, resumed, 4)
    np.testing.assert_array_equal(resumed.numpy(), uninterrupted)


def test_state_dict_is_a_copy_and_mismatches_are_refused(device):
    p = wp.array(START.astype(np.float32), device=device, requires_grad=True)
    opt = Adam([p], 0.1)
    run(opt, p, 1)
    d = opt.state_dict()
    d["state"]["m"][0][:] = 123.0
    assert not np.any(opt.state["m"][0].numpy() == 123.0)
    with pytest.raises(ValueError, match="Adam"):
        SGD([p], 0.1).load_state_dict(d)
    short = wp.array(np.zeros(2, np.float32), device=device, requires_grad=True)
    with pytest.raises(ValueError, match="shape"):
        Adam([short], 0.1).load_state_dict(d)


def test_bad_parameters_are_refused(device):
    # a parameter without a gradient buffer is accepted (Warp passes gradients to step()), but step() without
    # gradients refuses it
    with pytest.raises(ValueError, match="requires_grad"):
        SGD([wp.zeros(3, dtype=float, device=device)], 0.1).step()
    with pytest.raises(TypeError, match="float32 or float64"):
        SGD([wp.zeros(3, dtype=wp.int32, device=device, requires_grad=True)], 0.1)
    p = wp.zeros(3, dtype=float, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="lower"):
        Adam([p], 0.1, bounds=[(1.0, 0.0)])
    with pytest.raises(ValueError, match="entries"):
        Adam([p], 0.1, bounds=[None, None])


def test_non_finite_gradient_is_refused_without_touching_anything(device):
    p = wp.array(START.astype(np.float32), device=device, requires_grad=True)
    opt = Adam([p], 0.1)
    run(opt, p, 2)
    before, moments = p.numpy().copy(), opt.state_dict()
    p.grad.assign(np.array([1.0, np.nan, 0, 0, 0, 0], np.float32))
    with pytest.raises(FloatingPointError, match="nan"):
        opt.step()
    np.testing.assert_array_equal(p.numpy(), before)
    assert opt.step_count == 2
    np.testing.assert_array_equal(opt.state["m"][0].numpy(), moments["state"]["m"][0])


@wp.kernel
def squared_distance(x: wp.array(dtype=wp.vec3), target: wp.vec3, loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - target
    wp.atomic_add(loss, 0, wp.dot(d, d))


def test_adam_minimises_a_taped_loss(device):
    x = wp.array(np.zeros((4, 3), np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    target = wp.vec3(1.0, -2.0, 0.5)
    opt = Adam([x], 0.1)
    for _ in range(200):
        loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        tape = Tape()
        with tape:
            wp.launch(squared_distance, dim=4, inputs=[x, target, loss], device=device)
        tape.backward(loss=loss)
        norm = opt.step()
        tape.zero()
    assert math.isfinite(norm)
    np.testing.assert_allclose(x.numpy(), np.tile([1.0, -2.0, 0.5], (4, 1)), atol=1e-2)


def test_warp_signature_and_explicit_gradients(device):
    """Warp's optimiser API: Adam(params=None, lr=..., betas=...), set_params, reset_internal_state, step(grads),
    m/v moments; state is kept by set_params for the same parameters; mismatched gradients are refused."""
    opt = Adam(lr=0.1, betas=(0.8, 0.99))
    with pytest.raises(RuntimeError, match="parameters must be set"):
        opt.step([])
    p = wp.array([1.0, -2.0], dtype=float, device=device)
    ref = wp.array([1.0, -2.0], dtype=float, device=device, requires_grad=True)
    opt.set_params([p])
    ref_opt = Adam([ref], 0.1, betas=(0.8, 0.99))
    for _ in range(3):
        g = wp.array(2.0 * p.numpy(), dtype=float, device=device)
        ref.grad.assign(2.0 * ref.numpy())
        opt.step([g])
        ref_opt.step()
    np.testing.assert_array_equal(p.numpy(), ref.numpy())
    m = opt.m[0]
    opt.set_params([p])
    assert opt.m[0] is m
    opt.reset_internal_state()
    assert not opt.m[0].numpy().any() and not opt.v[0].numpy().any()
    with pytest.raises(TypeError, match="dtype must match"):
        opt.step([wp.zeros(2, dtype=wp.int32, device=device)])
    with pytest.raises(ValueError, match="shape must match"):
        opt.step([wp.zeros((2, 1), dtype=float, device=device)])
