"""Scenes: YAML files describing a simulation (format in `format.py`, documented in docs/scenes.md), validated
into typed specs, built into a Model and solver, and run into a USD file."""

from .build import BuiltScene, SceneObject, build_scene
from .errors import SceneError, SimulationError
from .scene import RunResult, Scene

__all__ = ["Scene", "RunResult", "BuiltScene", "SceneObject", "build_scene", "SceneError", "SimulationError"]
