"""Warp's own test suite on `kernels`: run it, record the warp-lang baseline, regenerate the README table and docs.

    python tools/warp_compat.py baseline [FILE ...]   # real warp-lang on its CPU -> tests/warp_compat/warp_cpu_baseline.json
    python tools/warp_compat.py baseline --all        # ... every test file of warp/tests not yet stored for this version
    python tools/warp_compat.py run [FILE ...]        # kernels -> tests/warp_compat/last_run.json, prints a table
    python tools/warp_compat.py run --all [--resume]  # ... every test file (--resume: those not in the last run yet)
    python tools/warp_compat.py report                # README table + docs/warp_compat.md from baseline + last run
    python tools/warp_compat.py triage [--all]        # from the last run: failures not listed, listed ones now passing
    python tools/warp_compat.py examples [NAME ...]   # Warp's example programs: Warp vs kernels, wall time, arrays
    python tools/warp_compat.py examples --readme     # ... and regenerate the README's examples table

FILE is a path relative to warp/tests (default: the part CI runs, harness.FILES). The baseline is run once per
warp-lang version and committed; `run` is what CI's test (tests/warp_compat/test_warp_suite.py) does per file.
A second worker can share a long run: the same command with --reverse goes through the files last to first.
Each file's run is bounded (harness.FILE_TIMEOUT); files outside the comparison by rule are recorded as such.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "warp_compat"))

import classify  # noqa: E402
import examples  # noqa: E402
import harness  # noqa: E402

BASELINE = os.path.join(REPO, "tests", "warp_compat", "warp_cpu_baseline.json")
LAST_RUN = os.path.join(REPO, "tests", "warp_compat", "last_run.json")
STALL_TIMEOUT = 600.0  # [s] without a test finishing: one cold compile of a large module can take minutes


def _load(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _save(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _statuses(result: dict) -> dict:
    return {tid: status for tid, (status, _) in result["tests"].items()}


def _warp_version() -> str:
    from importlib.metadata import version

    return version("warp-lang")


def cmd_run(impl: str, files: list, out: str, *, missing_only: bool = False) -> None:
    """Run `files` on `impl` ("warp": the installed warp-lang, "kernels": this toolkit) and store each file's
    outcome in `out`. `missing_only`: leave files already stored for this warp-lang version alone (the baseline
    is computed once per version), except files cut short by the time bound."""
    version = _warp_version()
    for rel in files:
        # re-read before each file: another worker (--reverse) may share the file and have stored it
        stored = _load(out).get(rel, {})
        if missing_only and stored.get("warp_version") == version and not stored.get("file_timeout"):
            continue
        why = harness.file_exclusion(rel)
        if why:
            _store_entry(out, rel, {"statuses": {}, "import_error": None, "messages": {}, "seconds": 0.0,
                                    "excluded_file": why, "warp_version": version})
            print(f"{rel:40s}     -    excluded: {why}", flush=True)
            continue
        start = time.monotonic()
        result = harness.run_file(impl, rel, stall_timeout=STALL_TIMEOUT)
        elapsed = time.monotonic() - start
        _store_entry(out, rel, {
            "statuses": _statuses(result), "import_error": result["import_error"],
            "messages": {tid: msg[-600:] for tid, (status, msg) in result["tests"].items()
                         if status not in ("pass", "excluded", "skip")},
            "seconds": round(elapsed, 1), "file_timeout": result["file_timeout"], "warp_version": version})
        counts = harness.summarize(result)
        print(f"{rel:40s} {elapsed:7.1f}s  {json.dumps(counts)}", flush=True)


def _store_entry(path: str, rel: str, entry: dict) -> None:
    """Store one file's outcome, keeping every other file's (read again: two workers may share the file)."""
    import fcntl

    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load(path)
        data[rel] = entry
        _save(path, data)


def _known(rel: str) -> dict:
    import yaml

    path = os.path.join(REPO, "tests", "warp_compat", "known_failures", rel[:-3].replace("/", "__") + ".yaml")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return yaml.safe_load(f) or {}


def table_rows(baseline: dict, ours: dict, files=None) -> list:
    """(file, tests, excluded, Warp CPU passes, our passes of those, known failures) per file, plus a total."""
    rows = []
    for rel in files or harness.FILES:
        base = baseline.get(rel, {}).get("statuses", {})
        mine = ours.get(rel, {}).get("statuses", {})
        passes = {t for t, s in base.items() if s == "pass"}
        ours_pass = {t for t in passes if mine.get(t) == "pass"}
        excluded = sum(1 for s in base.values() if s == "excluded")
        rows.append((rel, len(base), excluded, len(passes), len(ours_pass), len(_known(rel))))
    total = tuple(sum(r[i] for r in rows) for i in range(1, 6))
    rows.append(("**total**",) + total)
    return rows


def render_table(rows: list) -> str:
    lines = ["| Warp test file | tests | excluded by rule | Warp 1.19 CPU passes | kernels passes | % | known failures |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for rel, n, excl, wp_pass, ours, known in rows:
        pct = f"{100.0 * ours / wp_pass:.1f}" if wp_pass else "-"
        lines.append(f"| {rel} | {n} | {excl} | {wp_pass} | {ours} | {pct} | {known} |")
    return "\n".join(lines)


def whole_suite_rows(baseline: dict, ours: dict, previous: dict | None = None) -> list:
    """Per file of the whole suite: (file, Warp CPU passes, our passes, {kind: count}, note); files outside the
    comparison by rule carry their reason as the note. A file without a run in `ours` keeps its row from
    `previous` (the table as last generated, see `stored_whole_suite_rows`), so that running a few files again
    and reporting does not lose the other files' measurement."""
    rows = []
    for rel in harness.all_files():
        why = harness.file_exclusion(rel)
        if why:
            rows.append((rel, 0, 0, {}, f"excluded: {why}"))
            continue
        base, mine = baseline.get(rel, {}), ours.get(rel, {})
        if not mine and rel in (previous or {}):
            rows.append(previous[rel])
            continue
        passes = sum(1 for s in base.get("statuses", {}).values() if s == "pass")
        kinds: dict = {}
        for k in classify.file_kinds(base, mine, _known(rel)).values():
            kinds[k] = kinds.get(k, 0) + 1
        ours_pass = passes - sum(kinds.values())
        note = ""
        if not base:
            note = "no Warp baseline yet"
        elif not mine:
            note = "not run here yet"
        elif mine.get("import_error"):
            note = "import: " + mine["import_error"].strip().splitlines()[-1][:90]
        elif mine.get("file_timeout"):
            note = f"stopped at the {harness.FILE_TIMEOUT:.0f} s bound"
        rows.append((rel, passes, ours_pass, kinds, note))
    return rows


def stored_whole_suite_rows(text: str) -> dict:
    """The whole-suite table in `text` (as render_whole_suite writes it) read back: {file: row}."""
    if WHOLE_BEGIN not in text:
        return {}
    body = text[text.index(WHOLE_BEGIN) + len(WHOLE_BEGIN):text.index(WHOLE_END)]
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 + len(classify.KINDS) or not cells[1].isdigit():
            continue  # the header, its rule, the total
        counts = [int(c) if c else 0 for c in cells[4:4 + len(classify.KINDS)]]
        kinds = {k: v for k, v in zip(classify.KINDS, counts) if v}
        rows[cells[0]] = (cells[0], int(cells[1]), int(cells[2]), kinds, cells[-1])
    return rows


def render_whole_suite(rows: list) -> str:
    head = "| Warp test file | Warp 1.19 CPU passes | kernels passes | % | " + " | ".join(classify.KINDS) + " | note |"
    lines = [head, "|---|---:|---:|---:|" + "---:|" * len(classify.KINDS) + "---|"]
    totals = [0, 0] + [0] * len(classify.KINDS)
    for rel, passes, ours, kinds, note in rows:
        if note.startswith("excluded"):
            continue
        pct = f"{100.0 * ours / passes:.1f}" if passes else "-"
        counts = [kinds.get(k, 0) for k in classify.KINDS]
        for i, v in enumerate([passes, ours] + counts):
            totals[i] += v
        cells = " | ".join(str(c) if c else "" for c in counts)
        lines.append(f"| {rel} | {passes} | {ours} | {pct} | {cells} | {note.replace('|', '/')} |")
    pct = f"{100.0 * totals[1] / totals[0]:.1f}" if totals[0] else "-"
    lines.append(f"| **total** | {totals[0]} | {totals[1]} | {pct} | " + " | ".join(map(str, totals[2:])) + " | |")
    excluded = [r for r in rows if r[4].startswith("excluded")]
    lines.append("")
    lines.append(f"Outside the comparison by rule ({len(excluded)} files, neither Warp's baseline nor kernels runs "
                 "them): " + "; ".join(f"`{r[0]}` ({r[4][10:]})" for r in excluded) + ".")
    return "\n".join(lines)


MARK_BEGIN = "<!-- warp-compat-table: generated by tools/warp_compat.py report -->"
MARK_END = "<!-- /warp-compat-table -->"


def replace_between_marks(text: str, table: str) -> str:
    start, end = text.index(MARK_BEGIN) + len(MARK_BEGIN), text.index(MARK_END)
    return text[:start] + "\n" + table + "\n" + text[end:]


WHOLE_BEGIN = "<!-- warp-compat-whole-suite: generated by tools/warp_compat.py report -->"
WHOLE_END = "<!-- /warp-compat-whole-suite -->"


SUMMARY_BEGIN = "<!-- warp-compat-summary: generated by tools/warp_compat.py report -->"
SUMMARY_END = "<!-- /warp-compat-summary -->"


def render_summary(whole: list) -> str:
    """Both figures: CI's fixed part and the whole suite (files with a Warp baseline and a run here)."""
    counted = [r for r in whole if not r[4].startswith("excluded")]
    measured = [r for r in counted if not r[4].startswith(("no Warp baseline", "not run here"))]
    kinds = {k: sum(r[3].get(k, 0) for r in measured) for k in classify.KINDS}
    lines = ["| part of Warp's suite | test files | Warp 1.19 CPU passes | kernels passes | % |",
             "|---|---:|---:|---:|---:|"]
    # CI's figure from the same rows as the whole suite's: a file of CI's part not run again keeps its stored row,
    # so a partial run never blanks the figure (the per-file table above is regenerated only from a whole run).
    ci_files = set(harness.FILES)
    ci_measured = [r for r in measured if r[0] in ci_files]
    ci_wp, ci_ours = sum(r[1] for r in ci_measured), sum(r[2] for r in ci_measured)
    lines.append(f"| CI's part (the test command) | {len(ci_measured)} | {ci_wp} | {ci_ours} | "
                 f"{100.0 * ci_ours / max(ci_wp, 1):.1f} |")
    wp_pass, ours = sum(r[1] for r in measured), sum(r[2] for r in measured)
    lines.append(f"| whole suite, measured (`run --all`) | {len(measured)} of {len(counted)} | {wp_pass} | {ours} | "
                 f"{100.0 * ours / max(wp_pass, 1):.1f} |")
    lines.append("")
    lines.append("Failures of the measured files by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.items()) + "."
                 + (f" {len(counted) - len(measured)} test files have no Warp baseline or no run here yet."
                    if len(measured) < len(counted) else ""))
    return "\n".join(lines)


def _replace_marked(text: str, begin: str, end: str, body: str) -> str:
    if begin not in text:
        return text
    s, e = text.index(begin) + len(begin), text.index(end)
    return text[:s] + "\n" + body + "\n" + text[e:]


def cmd_report() -> None:
    """The README's and docs/warp_compat.md's tables: CI's part per file (when every file of it has a result
    here), both figures, and the whole suite per file with each failure's kind; the known-failure listing."""
    baseline, ours = _load(BASELINE), _load(LAST_RUN)
    missing = [rel for rel in harness.FILES if rel not in ours or rel not in baseline]
    ci_rows = None if missing else table_rows(baseline, ours)
    if missing:
        print(f"CI's part not regenerated: no result here for {missing} (`tools/warp_compat.py run`)")
    with open(os.path.join(REPO, "docs", "warp_compat.md")) as f:
        previous = stored_whole_suite_rows(f.read())
    whole = whole_suite_rows(baseline, ours, previous)
    for path in (os.path.join(REPO, "README.md"), os.path.join(REPO, "docs", "warp_compat.md")):
        with open(path) as f:
            text = f.read()
        if ci_rows is not None:
            text = replace_between_marks(text, render_table(ci_rows))
        text = _replace_marked(text, SUMMARY_BEGIN, SUMMARY_END, render_summary(whole))
        text = _replace_marked(text, WHOLE_BEGIN, WHOLE_END, render_whole_suite(whole))
        with open(path, "w") as f:
            f.write(text)
    known_path = os.path.join(REPO, "docs", "warp_compat.md")
    with open(known_path) as f:
        text = f.read()
    listing = []
    for rel in harness.all_files():
        known = _known(rel)
        if known:
            listing.append(f"\n### {rel}\n")
            listing.extend(f"- `{tid}`: {reason}" for tid, reason in sorted(known.items()))
    begin, end = "<!-- known-failures: generated -->", "<!-- /known-failures -->"
    s, e = text.index(begin) + len(begin), text.index(end)
    with open(known_path, "w") as f:
        f.write(text[:s] + "\n" + "\n".join(listing) + "\n" + text[e:])
    print(render_summary(whole))


def cmd_triage(files: list) -> int:
    """Print what the known-failure lists need: tests Warp passes that fail here unlisted, and listed tests that
    pass now, in `files` (those run). Returns the number of such tests."""
    baseline, ours = _load(BASELINE), _load(LAST_RUN)
    count = 0
    for rel in files:
        if rel not in ours:
            continue
        base = baseline.get(rel, {}).get("statuses", {})
        mine = ours.get(rel, {}).get("statuses", {})
        messages = ours.get(rel, {}).get("messages", {})
        known = _known(rel)
        for tid in sorted(t for t, st in base.items() if st == "pass"):
            status = mine.get(tid, "missing")
            if status != "pass" and tid not in known:
                last = (messages.get(tid, "").strip().splitlines() or [""])[-1][:160]
                print(f"UNLISTED {rel} {tid} [{status}] {last}")
                count += 1
            elif status == "pass" and tid in known:
                print(f"PASSING  {rel} {tid} (listed: {known[tid]})")
                count += 1
        if ours.get(rel, {}).get("import_error"):
            print(f"IMPORT   {rel}: {ours[rel]['import_error'].strip().splitlines()[-1][:200]}")
    return count


EXAMPLES_BEGIN = "<!-- warp-examples-table: generated by tools/warp_compat.py examples --readme -->"
EXAMPLES_END = "<!-- /warp-examples-table -->"
TIMED_RUNS = 3  # timed runs of each example on each implementation; the table shows the faster
SHORT_RUNS = 7  # for an example that runs under SHORT_SECONDS, whose time is mostly imports (below)
SHORT_SECONDS = 1.0


def cmd_examples(names: list, readme: bool) -> int:
    """Each example on real Warp and on kernels (through warp_shim): run once to warm both compile caches, then
    TIMED_RUNS times each (SHORT_RUNS when Warp's run took under SHORT_SECONDS), in turn; the program's best wall
    time [s] (the interpreter's start, `import warp` and `wp.init()`, which loads each one's native runtime, not
    included) beside Warp's, and whether every array (of the faster run) agrees. Returns the number of examples
    that fail or differ."""
    names = names or list(examples.EXAMPLES)
    rows, bad = [], 0
    print(f"{'example':48s} {'Warp CPU [s]':>12s} {'kernels [s]':>12s} {'ratio':>6s}  arrays", flush=True)
    for name in names:
        warm = [examples.run_example(impl, name) for impl in ("warp", "kernels")]  # warm the compile caches
        # the fastest of TIMED_RUNS runs of each, taken in turn: a short example's time (0.05 to 0.3 s) is mostly
        # the import of pxr and other libraries, which other processes' load on the shared cores makes vary by
        # as much as 0.1 s from one run to the next (raycast: 0.166 s, of which pxr's import 0.14 s and its
        # stage's opening 0.018 s, the same library in both): SHORT_RUNS of those
        short = warm[0].seconds < SHORT_SECONDS
        timed: dict = {"warp": [], "kernels": []}
        for _ in range(SHORT_RUNS if short else TIMED_RUNS):
            for impl in timed:
                timed[impl].append(examples.run_example(impl, name))
        runs = {impl: min(results, key=lambda r: r.seconds if r.returncode == 0 else float("inf"))
                for impl, results in timed.items()}
        warp_run, ours = runs["warp"], runs["kernels"]
        if warp_run.returncode:
            verdict = "Warp fails"
        elif ours.returncode:
            last = (ours.output.strip().splitlines() or [""])[-1]
            verdict = f"fails: {last[:110]}"
        else:
            problems = examples.compare(name, warp_run.arrays, ours.arrays)
            spec = examples.EXAMPLES[name]
            exact = all(np.array_equal(ours.arrays.get(k), v, equal_nan=v.dtype.kind in "fc")
                        for k, v in warp_run.arrays.items() if not k.rsplit(".", 1)[-1].startswith("_")
                        and k not in spec.ignore and k in ours.arrays)
            verdict = ("identical" if exact else f"agree (rtol {spec.rtol:g})") if not problems else \
                f"differ: {problems[0]}"
        bad += not verdict.startswith(("identical", "agree"))
        ratio = ours.seconds / warp_run.seconds if warp_run.seconds > 0 and ours.returncode == 0 else float("nan")
        rows.append((name, warp_run.seconds, ours.seconds, ratio, verdict))
        print(f"{name:48s} {warp_run.seconds:12.3f} {ours.seconds:12.3f} {ratio:6.2f}  {verdict}", flush=True)
    if readme:
        lines = ["| Warp example (CPU, small sizes) | Warp 1.19 [s] | kernels [s] | ratio | arrays |",
                 "|---|---:|---:|---:|---|"]
        for name, w, k, r, verdict in rows:
            cell = lambda x: "-" if x != x else f"{x:.2f}"  # noqa: E731  (NaN: did not run)
            lines.append(f"| {name} | {cell(w)} | {cell(k)} | {cell(r)} | {verdict.replace('|', '/')} |")
        ok = sum(1 for r in rows if r[4].startswith(("identical", "agree")))
        lines.append(f"| **{ok} of {len(rows)} run with Warp's numbers** | | | | |")
        path = os.path.join(REPO, "README.md")
        with open(path) as f:
            text = f.read()
        start, end = text.index(EXAMPLES_BEGIN) + len(EXAMPLES_BEGIN), text.index(EXAMPLES_END)
        with open(path, "w") as f:
            f.write(text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:])
    return bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("baseline", "run", "report", "triage", "examples"))
    parser.add_argument("files", nargs="*", help="Warp test files, or example names (core.example_dem) for examples")
    parser.add_argument("--readme", action="store_true", help="examples: regenerate the README's examples table")
    parser.add_argument("--resume", action="store_true",
                        help="run: leave files already in the last run alone (a long --all run stopped midway)")
    parser.add_argument("--reverse", action="store_true",
                        help="go through the files last to first (a second worker beside a first one)")
    parser.add_argument("--all", action="store_true",
                        help="every test file that ships in warp/tests (default: the part CI runs)")
    args = parser.parse_args(argv)
    if args.command == "examples":
        return 1 if cmd_examples(args.files, args.readme) else 0
    files = args.files or (harness.all_files() if args.all else list(harness.FILES))
    if args.reverse:
        files = files[::-1]
    if args.command == "baseline":
        cmd_run("warp", files, BASELINE, missing_only=not args.files)
    elif args.command == "run":
        cmd_run("kernels", files, LAST_RUN, missing_only=args.resume)
    elif args.command == "triage":
        return 1 if cmd_triage(files) else 0
    else:
        cmd_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
