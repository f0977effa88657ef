"""The whole-suite report's sorting of failures into kinds (classify.py), on outcomes as the harness records them."""

import pytest

import classify
import harness


def test_kinds_of_recorded_outcomes():
    assert classify.kind("timeout", "") == "not run"
    assert classify.kind("error", "AttributeError: module 'warp' has no attribute 'tile_stack'") == "missing API"
    assert classify.kind("error", "kernels.errors.CompileError: x.py:3: a tile cannot be sliced") == "refused"
    assert classify.kind("fail", 'AssertionError: "Unsupported data type" does not match "other"') == \
        "different error"
    assert classify.kind("fail", "AssertionError: RuntimeError not raised") == "accepts what Warp refuses"
    assert classify.kind("fail", "Mismatched elements: 2 / 3\n ACTUAL: array([1.])\n DESIRED: array([2.])") == \
        "wrong number"
    assert classify.kind("fail", "AssertionError: np.int32(42) is not an instance of <class 'int'>") == \
        "other assertion"


def test_file_kinds_uses_the_import_error_and_the_known_reasons():
    base = {"statuses": {"A.a": "pass", "A.b": "pass", "A.c": "skip"}}
    ours = {"statuses": {}, "import_error": "ModuleNotFoundError: No module named 'warp.geometry'", "messages": {}}
    assert classify.file_kinds(base, ours) == {"A.a": "missing API", "A.b": "missing API"}
    ours = {"statuses": {"A.a": "pass", "A.b": "fail"}, "messages": {"A.b": "ACTUAL: 1\nDESIRED: 2"}}
    assert classify.file_kinds(base, ours) == {"A.b": "wrong number"}
    known = {"A.b": "Warp's expected value is wrong: checked by central differences"}
    assert classify.file_kinds(base, ours, known) == {"A.b": "Warp's number is wrong"}


def test_whole_suite_files_and_exclusions():
    pytest.importorskip("warp", reason="warp-lang (a test extra) provides the test files")
    files = harness.all_files()
    assert set(harness.FILES) <= set(files) and len(files) > 150
    assert harness.file_exclusion("fem/test_fem_field.py") and harness.file_exclusion("cuda/test_streams.py")
    assert harness.file_exclusion("test_sparse.py") and not harness.file_exclusion("test_vec.py")
