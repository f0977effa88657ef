"""Sort a Warp-suite test that Warp passes but `kernels` does not into one kind of failure, from its recorded outcome.

Kinds (in the order they are checked):
- ``not run``: the file's run passed its time bound (or the child died) before or in the test;
- ``missing API``: a name Warp has and the shim lacks (AttributeError, ImportError, NameError, NotImplementedError,
  "is not a builtin", "not supported", an out-of-scope stub), also when the whole file failed to import for it;
- ``different error``: both refuse, but the test matches Warp's wording or exception type (assertRaisesRegex);
- ``accepts what Warp refuses``: the test expected an error and none came;
- ``refused``: kernels raised a clear error of its own (CompileError, LaunchError, TypeError, ValueError, ...);
- ``wrong number``: the test ran to its comparison of values and they differ (numpy's or unittest's report of
  unequal or not-close values);
- ``other assertion``: any other failed assertion (a type, an identity, an attribute, a message's text);
- ``Warp's number is wrong``: as above, where the known-failure list shows (with the check, e.g. central
  differences) that Warp's expected value is the wrong one; its reason starts with "Warp's expected".
"""

from __future__ import annotations

import re

KINDS = ("wrong number", "Warp's number is wrong", "other assertion", "refused", "missing API", "different error",
         "accepts what Warp refuses", "not run")

_MISSING = re.compile(
    r"AttributeError|ImportError|ModuleNotFoundError|NameError|NotImplementedError|has no attribute"
    r"|is not a builtin|not supported|is not defined|outside the kernel layer|unknown (?:function|builtin)"
    r"|not implemented|not provided")
_DIFFERENT_ERROR = re.compile(r"does not match|Regex didn't match|^AssertionError: .*Error.* != ", re.M)
_NOT_RAISED = re.compile(r"not raised|did not raise")
_VALUES_DIFFER = re.compile(
    r"Mismatch|[Nn]ot equal|DESIRED|ACTUAL|tolerance|not almost equal|First differing|"
    r"AssertionError: [-+0-9.e]+ != [-+0-9.e]+|not less|not greater|Lists differ|Tuples differ")


def kind(status: str, message: str) -> str:
    """The kind of failure (one of KINDS) of a test with this status ("fail", "error", "crash", "timeout",
    "missing") and message (the end of its traceback, or the file's import error)."""
    if status in ("crash", "timeout", "missing"):
        return "not run"
    tail = "\n".join(message.strip().splitlines()[-3:])
    if status == "fail":
        if _NOT_RAISED.search(tail):
            return "accepts what Warp refuses"
        if _DIFFERENT_ERROR.search(tail):
            return "different error"
        if _MISSING.search(tail):
            return "missing API"
        return "wrong number" if _VALUES_DIFFER.search(message) else "other assertion"
    return "missing API" if _MISSING.search(tail) else "refused"


def file_kinds(baseline_entry: dict, our_entry: dict, known: dict | None = None) -> dict:
    """{test id: kind} for every test the baseline passes that our run does not pass; `known`: the file's
    known-failure reasons."""
    passes = [t for t, s in baseline_entry.get("statuses", {}).items() if s == "pass"]
    statuses = our_entry.get("statuses", {})
    messages = our_entry.get("messages", {})
    import_error = our_entry.get("import_error")
    out = {}
    for tid in passes:
        status = statuses.get(tid)
        if status == "pass":
            continue
        if status is None:
            out[tid] = kind("error", import_error) if import_error else "not run"
        else:
            out[tid] = kind(status, messages.get(tid, ""))
        if out[tid] == "wrong number" and (known or {}).get(tid, "").startswith("Warp's expected"):
            out[tid] = "Warp's number is wrong"
    return out
