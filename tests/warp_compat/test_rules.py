"""The exclusion rule (rules.py) on test files that import Warp's internals by name, in a file of FOLLOW_IMPORTS."""

import importlib.util
import sys
import types
import unittest

import rules

TEST_FILE = '''
import warp._src.context as context
import warp._src.types as wptypes
from warp._src.types import Vector, int_types
from warp._src.context import get_warp_version


class T(unittest.TestCase):
    def test_alias_attribute(self):
        context.pack_arg(None)

    def test_alias_type_table(self):
        self.assertTrue(wptypes.int_types)

    def test_name(self):
        Vector[float, 3]

    def test_table_name(self):
        self.assertTrue(int_types)

    def test_lent_version_query(self):
        get_warp_version()

    def test_keyword_and_string_of_the_same_spelling(self):
        dict(context=1, name="Vector")
'''


def _load(tmp_path, monkeypatch, name):
    """Write TEST_FILE as warp's tests/NAME, import it against stand-in internal modules, return its tests."""
    for mod in ("warp", "warp._src", "warp._src.types", "warp._src.context"):
        stub = types.ModuleType(mod)
        stub.__path__ = []
        stub.Vector, stub.int_types, stub.get_warp_version = object(), (), lambda: "1"
        monkeypatch.setitem(sys.modules, mod, stub)
    folder = tmp_path / "tests"
    folder.mkdir()
    path = folder / name
    path.write_text("import unittest\n" + TEST_FILE)
    spec = importlib.util.spec_from_file_location(f"rules_case_{name[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return {t._testMethodName: t for t in unittest.defaultTestLoader.loadTestsFromTestCase(module.T)}


def test_names_imported_from_warp_internals_exclude_the_tests_using_them(tmp_path, monkeypatch):
    tests = _load(tmp_path, monkeypatch, "test_types.py")
    why = {name: rules.exclusion(t) for name, t in tests.items()}
    assert why["test_alias_attribute"] == "uses Warp internals (context.pack_arg)"
    assert why["test_name"] == "uses Warp internals (Vector)"
    # the public type tables and what the harness lends under Warp's names are not internals
    for name in ("test_alias_type_table", "test_table_name", "test_lent_version_query",
                 "test_keyword_and_string_of_the_same_spelling"):
        assert why[name] == "", name


def test_imports_are_followed_only_in_the_listed_files(tmp_path, monkeypatch):
    tests = _load(tmp_path, monkeypatch, "test_other.py")
    assert all(rules.exclusion(t) == "" for t in tests.values())
