"""Where the runs of a sweep execute: Ray tasks (a local Ray started for the sweep, or a cluster by address), or
local processes when Ray is not installed. Both take payloads and hand back rows as runs finish; neither has a
scheduler of its own beyond keeping at most `workers` runs in flight.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os

from .task import run_one

#: Ray retries a task whose worker process died (killed, out of memory) this many times before the row is an error.
TASK_RETRIES = 3


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def source_root() -> str:
    """The folder holding the `sim` package this driver imported: local workers import the same code from it."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LocalExecutor:
    """`workers` spawned processes on this machine (spawn, not fork: the driver may hold kernel threads)."""

    kind = "local processes"
    shares_cache = True  # same machine, same cache folder

    def __init__(self, workers: int, run_fn=run_one):
        self.workers, self.run_fn = workers, run_fn
        self.pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        self.pending: dict = {}

    def submit(self, payload: dict):
        self.pending[self.pool.submit(self.run_fn, payload)] = payload

    def wait(self) -> list:
        """Rows of the runs that finished next (blocks until at least one did)."""
        done, _ = cf.wait(list(self.pending), return_when=cf.FIRST_COMPLETED)
        rows = []
        for future in done:
            payload = self.pending.pop(future)
            try:
                rows += task_rows(future.result())
            except cf.process.BrokenProcessPool as e:
                # a local worker that died takes the pool with it: a fresh pool carries on with the other runs
                rows += lost_rows(payload, f"worker process died ({e})")
                self._renew()
        return rows

    def _renew(self):
        lost = dict(self.pending)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        self.pending = {}
        for payload in lost.values():
            self.submit(payload)

    def shutdown(self, *, stop_running: bool = False):
        """Wait for the runs in flight, or with `stop_running` (an interrupted sweep) end their processes: a job
        stopped by SIGTERM has seconds, not the length of a run, before it is killed."""
        if stop_running:
            for process in list(getattr(self.pool, "_processes", {}).values()):  # no public way to stop a worker
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Each run a Ray task asking for `threads` CPUs, retried when its worker dies. Uses the Ray this process is
    already connected to, else connects to `address`, else starts a local Ray sized to the machine (and shuts
    down only what it started)."""

    kind = "ray"

    def __init__(self, address: str | None, threads: int, workers: int | None, run_fn=run_one):
        import ray
        self.ray, self.workers = ray, workers
        self.started = False
        self.shares_cache = address is None  # on a cluster every node keeps its own cache at its default place
        if not ray.is_initialized():
            quiet_ray_token_notice()
            if address is None:
                # the driver's source tree on the path of local workers, so they run the same code
                env = {"env_vars": {"PYTHONPATH": _pythonpath()}}
                ray.init(num_cpus=os.cpu_count(), runtime_env=env, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            self.started = True
        self.task = ray.remote(run_fn).options(num_cpus=threads, max_retries=TASK_RETRIES, retry_exceptions=False)
        self.pending: dict = {}

    @property
    def cluster_cpus(self) -> int:
        return int(self.ray.cluster_resources().get("CPU", 1))

    def submit(self, payload: dict):
        # a run on a CUDA device asks for a GPU as well as its CPUs
        task = self.task.options(num_gpus=payload["gpus"]) if payload.get("gpus") else self.task
        self.pending[task.remote(payload)] = payload

    def wait(self) -> list:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        rows = []
        for ref in ready:
            payload = self.pending.pop(ref)
            try:
                rows += task_rows(self.ray.get(ref))
            except self.ray.exceptions.RayError as e:
                # retries exhausted (the worker or its node kept dying): a row that says so, not an aborted sweep
                rows += lost_rows(payload, f"{type(e).__name__}: {str(e).splitlines()[0]}")
        return rows

    def shutdown(self, *, stop_running: bool = False):
        """Stop the tasks still pending: a Ray this sweep started is shut down, which ends its workers and their
        tasks; on a cluster it joined, the tasks are cancelled (running ones are interrupted).

        Never `ray.cancel(force=True)` on our own cluster: a force-cancelled task whose reply was already on its
        way made Ray 2.5x's driver fail an internal check ("Tried to complete task that was not pending",
        task_manager.cc) and exit with status 1 before the sweep could say its summary (CI, session 17: a SIGTERM
        during a sweep)."""
        del stop_running  # pending tasks are stopped either way
        if self.started:
            self.ray.shutdown()
            return
        for ref in self.pending:
            self.ray.cancel(ref)


# Ray (2.5x and later) logs this notice at every ray.init that starts or joins a cluster with token authentication
# on, which it turns on by default for a new local cluster: not news on every sweep. Its warning that authentication
# is *off* stays.
RAY_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


class _DropRayTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(RAY_TOKEN_NOTICE)


def quiet_ray_token_notice():
    """Filter Ray's token-authentication notice out of its logger (once per process); nothing else it logs."""
    logger = logging.getLogger(RAY_TOKEN_LOGGER)
    if not any(isinstance(f, _DropRayTokenNotice) for f in logger.filters):
        logger.addFilter(_DropRayTokenNotice())


def task_rows(result) -> list:
    """The rows a task returned: one row, or a batch's list of rows."""
    return list(result) if isinstance(result, list) else [result]


def lost_rows(payload: dict, message: str) -> list:
    """The rows of a task (a run, or a batch of runs) whose worker never reported back."""
    return [lost_row(p, message) for p in payload.get("batch", [payload])]


def lost_row(payload: dict, message: str) -> dict:
    """The row of a run whose worker never reported back."""
    return {"run": payload["index"], "key": payload["key"], **payload["values"], "status": "error",
            "error": message, "seconds": float("nan"), "host": "", "node": ""}


def _pythonpath() -> str:
    parts = [source_root()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))
