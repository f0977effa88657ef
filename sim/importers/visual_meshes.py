"""The mesh files of a URDF robot's visuals (ImportResult.visuals of kind "mesh"), read with sim.mesh_io for
USD output: file names resolved next to the URDF (`package://` and `file://` too), a USD file's metersPerUnit
applied, errors naming the URDF line.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..mesh_io import OBJ_EXTENSIONS, USD_EXTENSIONS, MeshFormatError, load_mesh, meters_per_unit
from .assembly import ImporterError, ImportResult


@dataclass
class VisualMesh:
    """A visual mesh of a link: `points` [m, before `scale`], shape (n, 3); `triangles` shape (m, 3) int32;
    `scale` (3,) applied in the mesh frame, which is posed by `xform` (px, py, pz, qx, qy, qz, qw) in the link
    frame."""

    link: str
    xform: np.ndarray
    scale: tuple
    points: np.ndarray
    triangles: np.ndarray
    filename: str


def load_visual_meshes(result: ImportResult) -> list:
    """VisualMesh of every mesh visual of an import_urdf result, in file order.

    A mesh in a format sim.mesh_io does not read (STL, COLLADA: most ROS robots') is left out of the output with
    an ImportWarning naming it (the link still shows its collision shapes): a visual never stops a simulation.

    Raises:
        ImporterError: a mesh file in a format that is read (OBJ, USD) but missing, unresolvable or malformed;
            the message names the URDF file, the <mesh> line and the link.
    """
    base = os.path.dirname(os.path.abspath(result.path)) if result.path != "<string>" else os.getcwd()
    meshes = []
    for v in result.visuals:
        if v.kind != "mesh":
            continue

        def error(reason, v=v):
            return ImporterError(result.path, v.line, f"link {v.link!r}", f"visual mesh {v.filename!r}: {reason}")

        extension = os.path.splitext(v.filename)[1].lower()
        if extension not in OBJ_EXTENSIONS + USD_EXTENSIONS:
            warnings.warn(f"{result.path}:{v.line}: link {v.link!r}: visual mesh {v.filename!r} is not carried to "
                          f"the output: format {extension or '(no extension)'!r} is not read (supported: "
                          f"{', '.join(OBJ_EXTENSIONS + USD_EXTENSIONS)})", ImportWarning, stacklevel=2)
            continue
        path = resolve_mesh_path(v.filename, base)
        if path is None:
            raise error(f"not found (looked for it next to {base} and in the folders above it)")
        try:
            points, triangles = load_mesh(path)
            points = points * meters_per_unit(path)  # a USD file's own unit (URDF lengths are metres)
        except FileNotFoundError:
            raise error(f"no file at {path}") from None
        except MeshFormatError as e:
            raise error(f"cannot be read: {e}") from None
        meshes.append(VisualMesh(v.link, np.asarray(v.xform, dtype=np.float64), tuple(v.scale), points,
                                 triangles, path))
    return meshes


def resolve_mesh_path(filename: str, base: str) -> str | None:
    """The file a URDF mesh `filename` names: relative to `base` (the URDF's folder), `file://` stripped;
    `package://<name>/<rest>`: <rest> in `base`, else <ancestor>/<name>/<rest> for `base` or a folder above
    it (ROS packages without a ROS installation). None when a package file is found nowhere."""
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    if not filename.startswith("package://"):
        return os.path.normpath(os.path.join(base, filename))
    package, _, rest = filename[len("package://"):].partition("/")
    candidates = [os.path.join(base, rest)]
    folder = base
    while True:
        candidates.append(os.path.join(folder, package, rest))
        if os.path.basename(folder) == package:
            candidates.append(os.path.join(folder, rest))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
