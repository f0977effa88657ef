"""A sweep run function for tests/test_sweep.py that kills its own worker process on its first attempt at run 1,
so the test sees Ray retry the task. Imported by Ray workers (the tests folder is on their PYTHONPATH)."""

import os

from sim.sweeps.task import run_one


def kill_first_attempt(payload: dict) -> dict:
    marker = payload["run_dir"] + ".attempted"
    if payload["index"] == 1 and not os.path.exists(marker):
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        open(marker, "w").close()
        os._exit(9)  # as if the process were killed: no exception, no row, the worker is gone
    return run_one(payload)
