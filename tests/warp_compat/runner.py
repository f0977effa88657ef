"""Child process of the Warp-suite harness: run one of Warp's shipped test files and log each test's outcome.

    python runner.py --impl kernels|warp --file test_codegen.py --log OUT.jsonl [--skip TEST_ID ...]

`--impl kernels` runs the file against this toolkit through `warp_shim` (and our `unittest_utils`);
`--impl warp` runs it against the installed warp-lang on its CPU device (the baseline). Each test writes a
`start` line before it runs and an `end` line with its status after, flushed at once, so the parent can tell
which test a crash or a hang happened in. Tests are excluded by the rule in `rules.py`, identically for both.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import traceback
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rules  # noqa: E402


def wheel_tests_dir() -> str:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("warp-lang is not installed (it is a test extra: pip install -e '.[test]')")
    return os.path.join(list(spec.submodule_search_locations)[0], "tests")


def install_kernels_alias(tests_dir: str) -> None:
    """`warp` -> kernels (warp_shim), `warp.tests` -> the wheel's test files, `warp.tests.unittest_utils` -> ours."""
    import warp_shim

    wp = warp_shim.install()
    tests_pkg = types.ModuleType("warp.tests")
    tests_pkg.__path__ = [tests_dir]
    sys.modules["warp.tests"] = tests_pkg
    wp.tests = tests_pkg
    spec = importlib.util.spec_from_file_location("warp.tests.unittest_utils", os.path.join(HERE, "unittest_utils.py"))
    utils = importlib.util.module_from_spec(spec)
    sys.modules["warp.tests.unittest_utils"] = utils
    spec.loader.exec_module(utils)
    tests_pkg.unittest_utils = utils
    rules.install_type_tables(wp)
    rules.install_out_of_scope(wp)


class _Logger(unittest.TestResult):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def _write(self, **record):
        self.log.write(json.dumps(record) + "\n")
        self.log.flush()

    def startTest(self, test):
        super().startTest(test)
        self._ended = False
        self._subtest_failure = None
        self._write(event="start", id=_test_id(test))

    def _end(self, test, status, message=""):
        self._ended = True
        self._write(event="end", id=_test_id(test), status=status, message=message[-2000:])

    def addSubTest(self, test, subtest, err):
        # unittest reports a failed subTest here only: the test itself then gets no addSuccess/addFailure
        super().addSubTest(test, subtest, err)
        if err is not None and self._subtest_failure is None:
            status = "fail" if issubclass(err[0], test.failureException) else "error"
            self._subtest_failure = (status, f"{subtest._subDescription()}\n{_format(err)}")

    def stopTest(self, test):
        if not self._ended and self._subtest_failure is not None:
            self._end(test, *self._subtest_failure)
        super().stopTest(test)

    def addSuccess(self, test):
        self._end(test, "pass")

    def addFailure(self, test, err):
        self._end(test, "fail", _format(err))

    def addError(self, test, err):
        self._end(test, "error", _format(err))

    def addSkip(self, test, reason):
        self._end(test, "skip", str(reason))

    def addExpectedFailure(self, test, err):
        self._end(test, "pass")

    def addUnexpectedSuccess(self, test):
        self._end(test, "fail", "unexpected success")


def _format(err) -> str:
    etype, value, tb = err
    lines = traceback.format_exception(etype, value, tb)
    return "".join(lines[-6:])


def _test_id(test) -> str:
    if not hasattr(test, "_testMethodName"):  # unittest's stand-in for a failed setUpModule / setUpClass
        return f"{type(test).__name__}.{test.id()}"
    return f"{type(test).__name__}.{test._testMethodName}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=("kernels", "warp"), required=True)
    parser.add_argument("--file", required=True, help="path relative to warp/tests, e.g. tile/test_tile.py")
    parser.add_argument("--log", required=True)
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args()

    tests_dir = wheel_tests_dir()
    if args.impl == "kernels":
        install_kernels_alias(tests_dir)
    else:
        import warp

        warp.config.quiet = True
    module_name = "warp.tests." + args.file[:-3].replace("/", ".")
    with open(args.log, "a") as log:
        result = _Logger(log)
        try:
            module = importlib.import_module(module_name)
        except BaseException:  # noqa: BLE001  (an import failure is the file's result, not the harness's)
            result._write(event="import_error", message=traceback.format_exc()[-3000:])
            return 0
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        skip = set(args.skip)
        selected = unittest.TestSuite()
        for test in _flatten(suite):
            test_id = _test_id(test)
            if test_id in skip:
                continue
            why = rules.exclusion(test)
            if why:
                result._write(event="end", id=test_id, status="excluded", message=why)
                continue
            selected.addTest(test)
        selected.run(result)  # one suite, so class-level setUp/tearDown run as in unittest
    return 0


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


if __name__ == "__main__":
    sys.exit(main())
