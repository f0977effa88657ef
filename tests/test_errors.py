"""Error reports: compile errors name the kernel, the Python file:line and show the line; launch errors name the
kernel and the argument; a broken kernel does not break the others of its module.

Broken kernels are defined inside functions, so that importing this module defines none of them. A compile error
is found when the module is built (on first launch or `wp.load_module`), kept on the kernel, and raised when that
kernel is launched. Expected lines are found by marker comments (`# <- name`) in this file.

Not covered: `break` or `continue` outside a loop. Python rejects them when it compiles the enclosing function
(a SyntaxError on import), so no kernel with them can reach the compiler.
"""

import os
import re

import numpy as np
import pytest

import kernels as wp

THIS_FILE = os.path.abspath(__file__)
with open(THIS_FILE) as _f:
    SOURCE_LINES = _f.read().splitlines()


def marker_line(name: str) -> int:
    """1-based number of the line of this file that carries the comment `# <- name`."""
    pattern = re.compile(rf"# <- {re.escape(name)}(\s|$)")
    hits = [i + 1 for i, text in enumerate(SOURCE_LINES) if pattern.search(text)]
    assert len(hits) == 1, f"marker '{name}' found {len(hits)} times"
    return hits[0]


def marker_code(name: str) -> str:
    """The code of the marked line, without the marker comment and indentation."""
    return SOURCE_LINES[marker_line(name) - 1].split("# <-")[0].strip()


def assert_reports(error, *, function: str, marker: str, words=()):
    """`error` names `function`, this file and the marked line exactly, shows the line, and no C++ output."""
    message = str(error)
    first = message.splitlines()[0]
    match = re.match(r"^(?P<file>.+?):(?P<line>\d+): ", first)
    assert match, f"no file:line at the start of the message:\n{message}"
    assert os.path.samefile(match.group("file"), THIS_FILE), message
    assert int(match.group("line")) == marker_line(marker), message
    assert f"'{function}'" in message, message
    assert marker_code(marker) in message, message
    for word in words:
        assert word in message, message
    assert "error:" not in message, "C++ compiler output leaked into a compile error"
    assert "builtin.h" not in message and ".cpp" not in message, message


def plain_python_helper(x):
    return x


@wp.func
def square(x: float):
    return x * x


@wp.func
def uses_undefined(x: float):
    return x + undefined_in_func  # <- in-func  # noqa: F821


# ---------------------------------------------------------------------------------------------- compile errors
# Each case defines its kernel when called and returns (kernel, launch inputs, marker, extra words expected).


def _float_plus_vec3():
    @wp.kernel
    def float_plus_vec3(out: wp.array(dtype=float), v: wp.vec3):
        out[0] = 1.0 + v  # <- float-plus-vec3

    return float_plus_vec3, [wp.zeros(1, dtype=float), wp.vec3(1.0, 2.0, 3.0)], "float-plus-vec3", ["vec3"]


def _float_plus_array():
    @wp.kernel
    def float_plus_array(out: wp.array(dtype=float)):
        out[0] = 1.0 + out  # <- float-plus-array

    return float_plus_array, [wp.zeros(1, dtype=float)], "float-plus-array", ["array"]


def _undefined_name():
    @wp.kernel
    def undefined_name(out: wp.array(dtype=float)):
        out[0] = no_such_variable  # <- undefined-name  # noqa: F821

    return undefined_name, [wp.zeros(1, dtype=float)], "undefined-name", ["no_such_variable", "not defined"]


def _undefined_function():
    @wp.kernel
    def undefined_function(out: wp.array(dtype=float)):
        out[0] = no_such_function(1.0)  # <- undefined-function  # noqa: F821

    return undefined_function, [wp.zeros(1, dtype=float)], "undefined-function", ["no_such_function"]


def _unknown_builtin():
    @wp.kernel
    def unknown_builtin(out: wp.array(dtype=float)):
        out[0] = wp.no_such_builtin(1.0)  # <- unknown-builtin

    return unknown_builtin, [wp.zeros(1, dtype=float)], "unknown-builtin", ["no_such_builtin"]


def _python_function_call():
    @wp.kernel
    def python_function_call(out: wp.array(dtype=float)):
        out[0] = plain_python_helper(1.0)  # <- python-function

    return python_function_call, [wp.zeros(1, dtype=float)], "python-function", ["plain_python_helper"]


def _with_statement():
    @wp.kernel
    def with_statement(out: wp.array(dtype=float)):
        with open("x") as f:  # <- with-statement
            out[0] = 1.0

    return with_statement, [wp.zeros(1, dtype=float)], "with-statement", ["With"]


def _lambda_expression():
    @wp.kernel
    def lambda_expression(out: wp.array(dtype=float)):
        f = lambda y: y  # <- lambda  # noqa: E731
        out[0] = 1.0

    return lambda_expression, [wp.zeros(1, dtype=float)], "lambda", ["lambda"]


def _f_string():
    @wp.kernel
    def f_string(out: wp.array(dtype=float)):
        s = f"{out[0]}"  # <- f-string

    return f_string, [wp.zeros(1, dtype=float)], "f-string", ["f-string"]


def _list_comprehension():
    @wp.kernel
    def list_comprehension(out: wp.array(dtype=float)):
        values = [i for i in range(3)]  # <- list-comprehension

    return list_comprehension, [wp.zeros(1, dtype=float)], "list-comprehension", ["ListComp"]


def _try_statement():
    @wp.kernel
    def try_statement(out: wp.array(dtype=float)):
        try:  # <- try
            out[0] = 1.0
        except Exception:
            pass

    return try_statement, [wp.zeros(1, dtype=float)], "try", ["Try"]


def _unpack_count():
    @wp.kernel
    def unpack_count(out: wp.array(dtype=float)):
        a, b = 1.0, 2.0, 3.0  # <- unpack-count
        out[0] = a + b

    return unpack_count, [wp.zeros(1, dtype=float)], "unpack-count", ["unpack", "3", "2"]


def _unpack_vector():
    @wp.kernel
    def unpack_vector(out: wp.array(dtype=float), v: wp.vec3):
        a, b = v  # <- unpack-vector
        out[0] = a + b

    return unpack_vector, [wp.zeros(1, dtype=float), wp.vec3()], "unpack-vector", ["unpack"]


def _loop_changes_type():
    @wp.kernel
    def loop_changes_type(out: wp.array(dtype=float)):
        s = float(0.0)
        for i in range(3):  # <- loop-type
            s = i
        out[0] = float(s)

    return loop_changes_type, [wp.zeros(1, dtype=float)], "loop-type", ["'s'", "float32", "int32"]


def _while_changes_type():
    @wp.kernel
    def while_changes_type(out: wp.array(dtype=float)):
        k = int(0)
        while k < 3:  # <- while-type
            k = 1.5
        out[0] = float(k)

    return while_changes_type, [wp.zeros(1, dtype=float)], "while-type", ["'k'", "int32", "float32"]


def _kernel_returns_value():
    @wp.kernel
    def kernel_returns_value(out: wp.array(dtype=float)):
        return 1.0  # <- kernel-return

    return kernel_returns_value, [wp.zeros(1, dtype=float)], "kernel-return", ["return"]


def _for_else():
    @wp.kernel
    def for_else(out: wp.array(dtype=float)):
        for i in range(3):  # <- for-else
            out[0] = 1.0
        else:
            out[0] = 2.0

    return for_else, [wp.zeros(1, dtype=float)], "for-else", ["else"]


def _func_wrong_argument_count():
    @wp.kernel
    def func_wrong_argument_count(out: wp.array(dtype=float)):
        out[0] = square(1.0, 2.0)  # <- func-arg-count

    return func_wrong_argument_count, [wp.zeros(1, dtype=float)], "func-arg-count", ["square"]


def _func_unknown_keyword():
    @wp.kernel
    def func_unknown_keyword(out: wp.array(dtype=float)):
        out[0] = square(z=1.0)  # <- func-keyword

    return func_unknown_keyword, [wp.zeros(1, dtype=float)], "func-keyword", ["square", "'z'"]


def _func_wrong_argument_type():
    @wp.kernel
    def func_wrong_argument_type(out: wp.array(dtype=float)):
        out[0] = square(out)  # <- func-arg-type

    return func_wrong_argument_type, [wp.zeros(1, dtype=float)], "func-arg-type", ["square", "array"]


def _func_missing_argument():
    @wp.kernel
    def func_missing_argument(out: wp.array(dtype=float)):
        out[0] = square()  # <- func-missing

    return func_missing_argument, [wp.zeros(1, dtype=float)], "func-missing", ["square"]


def _branches_disagree_on_type():
    @wp.kernel
    def branches_disagree_on_type(out: wp.array(dtype=float), flag: int):
        if flag > 0:  # <- branch-type
            x = float(1.0)
        else:
            x = int(2)
        out[0] = float(x)

    return branches_disagree_on_type, [wp.zeros(1, dtype=float), 1], "branch-type", ["'x'", "float32", "int32"]


def _builtin_wrong_argument_count():
    @wp.kernel
    def builtin_wrong_argument_count(out: wp.array(dtype=float)):
        out[0] = wp.sin(1.0, 2.0)  # <- builtin-arg-count

    return builtin_wrong_argument_count, [wp.zeros(1, dtype=float)], "builtin-arg-count", ["sin"]


COMPILE_ERROR_CASES = {f.__name__.lstrip("_"): f for f in [
    _float_plus_vec3, _float_plus_array, _undefined_name, _undefined_function, _unknown_builtin,
    _python_function_call, _with_statement, _lambda_expression, _f_string, _list_comprehension, _try_statement,
    _unpack_count, _unpack_vector, _loop_changes_type, _while_changes_type, _kernel_returns_value, _for_else,
    _func_wrong_argument_count, _func_unknown_keyword, _func_wrong_argument_type, _func_missing_argument,
    _branches_disagree_on_type, _builtin_wrong_argument_count,
]}


@pytest.mark.parametrize("case", sorted(COMPILE_ERROR_CASES))
def test_compile_error_names_kernel_line_and_source(case):
    kernel, inputs, marker, words = COMPILE_ERROR_CASES[case]()
    with pytest.raises(wp.CompileError) as info:
        wp.launch(kernel, 1, inputs=inputs, device="cpu")
    assert_reports(info.value, function=kernel.name, marker=marker, words=words)
    assert info.value.loc.line == marker_line(marker)


def test_compile_error_is_a_kernel_error_with_structured_fields():
    kernel, inputs, marker, _ = _undefined_name()
    with pytest.raises(wp.KernelError) as info:
        wp.launch(kernel, 1, inputs=inputs, device="cpu")
    error = info.value
    assert isinstance(error, wp.CompileError)
    assert error.function == "undefined_name"
    assert os.path.samefile(error.loc.file, THIS_FILE)
    assert error.loc.line == marker_line(marker)
    assert marker_code(marker) in error.loc.source


def test_error_inside_func_points_into_the_func():
    @wp.kernel
    def calls_broken_func(out: wp.array(dtype=float)):
        out[0] = uses_undefined(1.0)

    with pytest.raises(wp.CompileError) as info:
        wp.launch(calls_broken_func, 1, inputs=[wp.zeros(1, dtype=float)], device="cpu")
    assert_reports(info.value, function="uses_undefined", marker="in-func", words=["undefined_in_func"])


def test_compile_error_is_raised_at_launch_not_at_definition_or_load():
    @wp.kernel(module="test_errors_load_module")
    def broken_at_load(out: wp.array(dtype=float)):
        out[0] = no_such_variable_at_load  # <- load-module  # noqa: F821

    # wp.load_module builds what it can and keeps the error on the kernel: the launch raises it
    wp.load_module("test_errors_load_module")
    assert isinstance(broken_at_load.error, wp.CompileError)
    for _ in range(2):  # and every later launch raises it again
        with pytest.raises(wp.CompileError) as info:
            wp.launch(broken_at_load, 1, inputs=[wp.zeros(1, dtype=float)], device="cpu")
        assert_reports(info.value, function="broken_at_load", marker="load-module")


@pytest.mark.parametrize("broken_first", [False, True], ids=["good-first", "broken-first"])
def test_broken_kernel_does_not_break_the_others_of_its_module(device, broken_first):
    # both kernels belong to this test module's kernels.Module and are built in one batch
    @wp.kernel
    def broken_neighbour(out: wp.array(dtype=float)):
        out[wp.tid()] = 1.0 + out  # <- broken-neighbour

    @wp.kernel
    def good_neighbour(out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = float(i) * 2.0

    assert broken_neighbour.module is good_neighbour.module
    out = wp.zeros(4, dtype=float, device=device)
    if broken_first:
        with pytest.raises(wp.CompileError) as info:
            wp.launch(broken_neighbour, 4, inputs=[out], device=device)
        assert_reports(info.value, function="broken_neighbour", marker="broken-neighbour")
    wp.launch(good_neighbour, 4, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [0.0, 2.0, 4.0, 6.0])
    with pytest.raises(wp.CompileError) as info:
        wp.launch(broken_neighbour, 4, inputs=[out], device=device)
    assert_reports(info.value, function="broken_neighbour", marker="broken-neighbour")


def test_broken_kernel_does_not_break_load_module():
    @wp.kernel(module="test_errors_load_module_mixed")
    def mixed_broken(out: wp.array(dtype=float)):
        out[0] = 1.0 + out

    @wp.kernel(module="test_errors_load_module_mixed")
    def mixed_good(out: wp.array(dtype=float)):
        out[wp.tid()] = 5.0

    wp.load_module("test_errors_load_module_mixed")
    assert mixed_good.error is None and mixed_good.lib is not None
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(mixed_good, 2, inputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [5.0, 5.0])
    with pytest.raises(wp.CompileError):
        wp.launch(mixed_broken, 1, inputs=[out], device="cpu")


# ---------------------------------------------------------------------------------------------- launch errors


@wp.kernel
def two_params(values: wp.array(dtype=float), count: int):
    i = wp.tid()
    values[i] = float(count)


@wp.kernel
def grid_kernel(values: wp.array2d(dtype=float)):
    i, j = wp.tid()
    values[i, j] = 1.0


def _launch_error(device, inputs, kernel=two_params, dim=2) -> str:
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(kernel, dim, inputs=inputs, device=device)
    message = str(info.value)
    assert f"'{kernel.name}'" in message
    assert "error:" not in message
    return message


def test_launch_with_too_few_arguments(device):
    message = _launch_error(device, [wp.zeros(2, dtype=float, device=device)])
    assert "2 arguments" in message and "got 1" in message
    assert "values" in message and "count" in message


def test_launch_with_too_many_arguments(device):
    message = _launch_error(device, [wp.zeros(2, dtype=float, device=device), 1, 2])
    assert "2 arguments" in message and "got 3" in message


@pytest.mark.parametrize("bad_count", [2.5, "three", [1, 2]], ids=["float", "str", "list"])
def test_launch_with_wrong_scalar_argument(device, bad_count):
    message = _launch_error(device, [wp.zeros(2, dtype=float, device=device), bad_count])
    assert "'count'" in message and "int32" in message


def test_launch_with_scalar_for_array(device):
    message = _launch_error(device, [3.0, 1])
    assert "'values'" in message and "array" in message


def test_launch_with_wrong_array_dtype(device):
    message = _launch_error(device, [wp.zeros(2, dtype=wp.int32, device=device), 1])
    assert "'values'" in message and "float32" in message and "int32" in message


def test_launch_with_wrong_array_ndim(device):
    message = _launch_error(device, [wp.zeros((2, 2), dtype=float, device=device), 1])
    assert "'values'" in message and "1 dimension(s), but the passed array has 2 dimension(s)" in message


def test_launch_with_fewer_dims_than_tid_coordinates_pads_them_with_one(device):
    # Warp 1.19's launch bounds: a 1-d launch of a kernel reading (i, j) runs j = 0 only (tests/test_launch_bounds.py
    # compares the padding and folding with Warp's)
    values = wp.zeros((2, 2), dtype=float, device=device)
    wp.launch(grid_kernel, 2, inputs=[values], device=device)
    np.testing.assert_array_equal(values.numpy(), [[1.0, 0.0], [1.0, 0.0]])


def test_failed_launch_leaves_kernel_usable(device):
    _launch_error(device, [wp.zeros(2, dtype=float, device=device), 2.5])
    values = wp.zeros(2, dtype=float, device=device)
    wp.launch(two_params, 2, inputs=[values, 3], device=device)
    np.testing.assert_array_equal(values.numpy(), [3.0, 3.0])


def test_launch_with_a_list_for_an_array_is_refused_as_in_warp(device):
    # Warp takes arrays and objects with an array interface (numpy, torch) for array parameters, not lists
    message = _launch_error(device, [[1.0, 2.0], 3], dim=2)
    assert message == ("Error launching kernel 'two_params', argument 'values' expects an array of type "
                       "array(ndim=1, dtype=float32), but passed value has type list.")
    values = np.zeros(2, dtype=np.float32)
    if device == "cpu":
        wp.launch(two_params, 2, inputs=[values, 3], device=device)  # a numpy array is taken, as in Warp
