"""`sim sweep` on a Ray cluster of two nodes simulated on this machine (ray.cluster_utils.Cluster): rows come from
both nodes. Its own file because it needs a Ray of its own, not the local one tests/test_sweep.py shares."""

from __future__ import annotations

import os

import pytest

from sim.sweeps import sweep

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_two_node_cluster_runs_rows_on_both_nodes(tmp_path):
    env = {"env_vars": {"PYTHONPATH": ROOT}}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    try:
        ray.init(address=cluster.address, runtime_env=env, log_to_driver=False)
        cluster.wait_for_nodes()
        path = tmp_path / "sweep.yaml"
        path.write_text(f"scene: {os.path.join(ROOT, 'scenes', 'cloth.yaml')}\n"
                        "set: [sim.frames=20, cloth.0.grid.dim_x=6, cloth.0.grid.dim_y=6]\n"
                        "axes:\n  materials.cotton.tri_ke: {logrange: [1.0e2, 1.0e4], count: 6}\n"
                        "metrics: [max_speed]\n")
        table = sweep(str(path), out_dir=str(tmp_path / "out"), say=lambda text: None)
        assert (table["status"] == "ok").all() and len(table) == 6
        assert table["node"].nunique() == 2, table["node"].tolist()
    finally:
        ray.shutdown()
        cluster.shutdown()
