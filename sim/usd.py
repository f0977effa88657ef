"""Write a simulation to a time-sampled USD stage (cloth, particles, colliders, rigid bodies), atomically.

    w = UsdWriter("out/cloth.usd", fps=60.0, up_axis="y")
    w.add_mesh("cloth", points, faces, normals=True, color=(0.8, 0.3, 0.2))
    w.add_points("particles", q, radii=0.01)
    w.add_collider("ball", kind="sphere", pos=(0, 1, 0), radius=0.4)
    w.add_body("crate", shapes=[dict(kind="box", half_extents=(0.1, 0.1, 0.1))])
    for frame in range(frames):
        w.write_frame(frame, points={"cloth": p, "particles": q}, bodies={"crate": (pos, quat)})
    w.close()   # or w.abort(); `with UsdWriter(...) as w:` closes on success and aborts on an exception

The stage is built in memory and exported on `close()` (and on each `save()` before it, which a long run calls
every few seconds so that a late failure keeps what was saved) to a temporary file beside the output, then renamed
over it: a crash or an error never leaves a half-written file, and an existing file stays untouched until the
rename. A write that fails (full disk, read-only file system) raises OutputWriteError: one line naming the file and
the cause. All frames are held in memory (a 64x64 cloth costs about 50 kB per frame, twice that with normals).

Conventions: lengths are in stage units (metres when `meters_per_unit` is 1); quaternions are (x, y, z, w), as in
`sim.quat_identity()`; a frame number is the USD time code, and time codes per second equal `fps`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt

from .atomic_file import remove_stale_temporaries, temporary_path, write_cause, write_failure

#: Collider and body shape kinds, with the size parameters each takes (see `UsdWriter.add_collider`).
SHAPE_PARAMETERS = {
    "sphere": ("radius",),
    "box": ("half_extents",),
    "capsule": ("radius", "half_height"),
    "plane": ("width", "length"),
    "mesh": ("points", "faces", "scale"),
}

_UP_AXES = {"y": UsdGeom.Tokens.y, "z": UsdGeom.Tokens.z}
# ".usd" may hold either encoding; without the explicit argument Sdf would pick the USD_DEFAULT_FILE_FORMAT one
USD_FORMATS = {".usd": "usdc", ".usdc": "usdc", ".usda": "usda"}
_SHAPE_COMMON_KEYS = ("kind", "name", "pos", "rot", "color")


@dataclass
class _Animated:
    """A Mesh or Points prim whose points are time-sampled."""

    prim_path: str
    points: Usd.Attribute
    extent: Usd.Attribute
    point_count: int
    normals: Usd.Attribute | None = None  # meshes written with normals=True
    triangles: np.ndarray | None = None  # (m, 3) int, for the normals
    max_radius: float = 0.0  # points: the extent encloses the spheres, as UsdGeom.Points' own extent does


@dataclass
class _Body:
    """A rigid body Xform whose translate and orient ops are time-sampled: the paths of the two attributes in the
    stage's root layer, where `write_frame` sets their samples."""

    prim_path: str
    layer: Sdf.Layer
    translate: Sdf.Path
    orient: Sdf.Path


class UsdWriter:
    """Accumulates prims and frames of a simulation in an in-memory USD stage and writes it atomically on `close`.

    Prims are added under a root Xform (the stage's default prim) with `add_mesh`, `add_points`, `add_collider` and
    `add_body`; each returns the prim path. Names are made valid, unique USD identifiers (`cloth 0` -> `cloth_0`,
    `0a` -> `_0a`); `write_frame` takes either the name given to `add_*` or the returned prim path.

    Args:
        path: output file; `.usd` and `.usdc` are written as binary crate files, `.usda` as text. Its directory is
            created on `close()` when missing.
        fps: frames per second; both `timeCodesPerSecond` and `framesPerSecond` of the stage.
        up_axis: "y" or "z" (either case). USD has no x up axis, so "x" is a ValueError.
        meters_per_unit: the stage's `metersPerUnit`: length of one stage unit [m].
        root: name of the root Xform, the default prim.
        infinite_plane_size: edge length written for an infinite plane's extent along each axis [stage units].

    Raises:
        ValueError: unsupported extension or up axis, non-positive fps, meters_per_unit or infinite_plane_size.
    """

    def __init__(self, path: str | os.PathLike, *, fps: float = 60.0, up_axis: str = "y",
                 meters_per_unit: float = 1.0, root: str = "World", infinite_plane_size: float = 20.0):
        self.path = os.fspath(path)
        extension = os.path.splitext(self.path)[1].lower()
        if extension not in USD_FORMATS:
            raise ValueError(f"{self.path}: unsupported USD extension {extension!r}; use one of "
                             f"{', '.join(USD_FORMATS)}")
        axis = str(up_axis).lower()
        if axis == "x":
            raise ValueError("up_axis 'x' cannot be written: USD stages support only the Y and Z up axes "
                             "(rotate the scene so that y or z is up)")
        if axis not in _UP_AXES:
            raise ValueError(f"up_axis must be 'y' or 'z', got {up_axis!r}")
        for label, value in (("fps", fps), ("meters_per_unit", meters_per_unit),
                             ("infinite_plane_size", infinite_plane_size)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{label} must be a positive number, got {value!r}")
        self.fps = float(fps)
        self.infinite_plane_size = float(infinite_plane_size)
        self._format = USD_FORMATS[extension]
        self._usd_stage = stage = Usd.Stage.CreateInMemory()
        self._deferred: list = []  # prims authored as layer specs at the next read of the stage (see _stage)
        UsdGeom.SetStageUpAxis(stage, _UP_AXES[axis])
        UsdGeom.SetStageMetersPerUnit(stage, float(meters_per_unit))
        stage.SetTimeCodesPerSecond(self.fps)
        stage.SetFramesPerSecond(self.fps)
        root_prim = UsdGeom.Xform.Define(stage, "/" + prim_identifier(root)).GetPrim()
        stage.SetDefaultPrim(root_prim)
        self.root_path = str(root_prim.GetPath())
        self._child_names: set[str] = set()
        self._animated: dict[str, _Animated] = {}
        self._bodies: dict[str, _Body] = {}
        self._first_frame: float | None = None
        self._last_frame: float | None = None
        self.saved_frame: float | None = None  # the last frame in the file at `path`, once saved

    # ----------------------------------------------------------------------------------------------- prims

    def add_mesh(self, name: str, points, faces, *, normals: bool = False, color=None,
                 double_sided: bool = True) -> str:
        """A `UsdGeom.Mesh` (cloth) with fixed topology and time-sampled `points` and `extent`.

        Args:
            name: prim name (sanitised, made unique).
            points: rest positions [stage units], shape (n, 3), float32 or float64; the value shown at any time
                before the first frame written for this mesh.
            faces: vertex indices, shape (m, k) with k >= 3 (triangles: k = 3), any integer type; written once.
            normals: also write per-vertex, area-weighted normals ("vertex" interpolation), time-sampled.
            color: display colour (r, g, b) in [0, 1], or None.
            double_sided: render both sides (cloth has no inside).

        Returns:
            The prim path, e.g. "/World/cloth_0".
        """
        p = as_points(points, f"mesh {name!r} points")
        f = as_faces(faces, len(p), f"mesh {name!r} faces")
        display_color = _color(color, f"mesh {name!r}")
        self._check_name_free(name)
        mesh = UsdGeom.Mesh.Define(self._stage, self._child_path(name))
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(f), f.shape[1], np.int32)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.ascontiguousarray(f.ravel())))
        # the fallback scheme, catmullClark, would smooth the cloth away from the simulated vertices
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        mesh.CreateDoubleSidedAttr(bool(double_sided))
        _set_color(mesh, display_color)
        record = _Animated(str(mesh.GetPath()), mesh.CreatePointsAttr(), mesh.CreateExtentAttr(), len(p))
        if normals:
            record.normals = mesh.CreateNormalsAttr()
            mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
            record.triangles = fan_faces(f)
        self._register(name, record, self._animated)
        _write_points(record, p, Usd.TimeCode.Default())
        return record.prim_path

    def add_points(self, name: str, points, radii, *, color=None) -> str:
        """A `UsdGeom.Points` (particles) with time-sampled `points` and `extent`.

        Args:
            name: prim name (sanitised, made unique).
            points: initial positions [stage units], shape (n, 3), float32 or float64.
            radii: particle radius [stage units], a number or shape (n,); written once as `widths` (diameters),
                with constant interpolation when all are equal, else vertex.
            color: display colour (r, g, b) in [0, 1], or None.

        Returns:
            The prim path.
        """
        p = as_points(points, f"points {name!r}")
        r = np.asarray(radii, dtype=np.float64)
        if r.ndim == 0:
            r = np.full(len(p), float(r))
        if r.shape != (len(p),) or not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ValueError(f"points {name!r}: radii must be a non-negative number or shape ({len(p)},), "
                             f"got shape {r.shape}")
        display_color = _color(color, f"points {name!r}")
        self._check_name_free(name)
        prim = UsdGeom.Points.Define(self._stage, self._child_path(name))
        if np.all(r == r[0]):
            prim.CreateWidthsAttr(Vt.FloatArray([2.0 * float(r[0])]))
            prim.SetWidthsInterpolation(UsdGeom.Tokens.constant)
        else:
            prim.CreateWidthsAttr(Vt.FloatArray.FromNumpy((2.0 * r).astype(np.float32)))
            prim.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
        _set_color(prim, display_color)
        record = _Animated(str(prim.GetPath()), prim.CreatePointsAttr(), prim.CreateExtentAttr(), len(p),
                           max_radius=float(r.max()))
        self._register(name, record, self._animated)
        _write_points(record, p, Usd.TimeCode.Default())
        return record.prim_path

    def add_collider(self, name: str, *, kind: str, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), color=None,
                     **size) -> str:
        """A static collider as its UsdGeom primitive, placed by translate and orient ops.

        Args:
            name: prim name (sanitised, made unique).
            kind: "sphere", "box", "capsule" or "plane".
            pos: position of the shape's centre [stage units], (3,).
            rot: orientation quaternion (x, y, z, w); normalised when written.
            color: display colour (r, g, b) in [0, 1], or None.
            **size: by kind, in stage units (the conventions of `sim.geometry`):
                sphere: `radius`.
                box: `half_extents` (hx, hy, hz); written as a Cube of size 2 with a scale op of the half extents.
                capsule: `radius`, `half_height`: the segment of length 2 * half_height along local y swept by
                    radius; written as a Capsule with axis "Y" and height 2 * half_height.
                plane: `width`, `length`: half extents along local x and z, 0 (the default) meaning infinite;
                    normal local +y; written as a Plane with axis "Y" of size 2 * width by 2 * length, or
                    `infinite_plane_size` along an infinite direction.
                mesh: `points` (n, 3) and `faces` (m, k) vertex indices, k >= 3, as add_mesh takes them, and
                    `scale` (3,) (default (1, 1, 1)) applied to the points in the mesh frame (a scale op);
                    written once as a Mesh (a visual: it moves with its body, nothing is time-sampled).

        Returns:
            The prim path.
        """
        shape = checked_shape(dict(size, kind=kind, pos=pos, rot=rot, color=color), f"collider {name!r}")
        return self._define_shape(self._child_path(name), shape)

    def add_body(self, name: str, shapes, *, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0)) -> str:
        """A rigid body: an Xform with time-sampled translate and orient ops, its shapes as child prims.

        Args:
            name: prim name (sanitised, made unique).
            shapes: a sequence of dicts, each with `kind`, the size parameters of `add_collider` and optionally
                `pos` and `rot` (relative to the body), `color` and `name` (child prim name, default "shape_<i>").
            pos: initial body position [stage units], (3,): the pose shown before the first frame that names it.
            rot: initial body orientation (x, y, z, w).

        Returns:
            The prim path of the body Xform.
        """
        checked = [checked_shape(shape, f"body {name!r} shape {i}") for i, shape in enumerate(shapes)]
        record = self._posed_xform(name, pos, rot, "body")
        used: set[str] = set()
        for i, shape in enumerate(checked):
            label = shape["name"] if shape["name"] is not None else f"shape_{i}"
            child = unique_name(prim_identifier(str(label)), used)
            self._define_shape(f"{record.prim_path}/{child}", shape)
        self._register(name, record, self._bodies)
        return record.prim_path

    def add_reference(self, name: str, asset_path: str | os.PathLike, *, pos=(0.0, 0.0, 0.0),
                      rot=(0.0, 0.0, 0.0, 1.0), scale=(1.0, 1.0, 1.0)) -> str:
        """A body whose geometry is another USD file, referenced (not copied): an Xform with time-sampled
        translate and orient ops like `add_body`'s, a fixed scale op, and a reference to `asset_path`'s default
        prim. `write_frame(bodies={name: (pos, quat)})` moves it.

        Args:
            name: prim name (sanitised, made unique).
            asset_path: the referenced USD file; written as given (an absolute path stays absolute).
            pos: initial position [stage units], (3,).
            rot: initial orientation (x, y, z, w).
            scale: scale of the asset along its own axes, (3,).

        Returns:
            The prim path of the Xform.

        Raises:
            ValueError: `asset_path` is not an existing file, or a bad pose or scale.
        """
        asset = os.fspath(asset_path)
        if not os.path.isfile(asset):
            raise ValueError(f"reference {name!r}: no USD file at {asset}")
        scale_value = Gf.Vec3f(*_vec3d(scale, f"reference {name!r} scale"))
        record = self._posed_xform(name, pos, rot, "reference", scale=scale_value, reference=asset)
        self._register(name, record, self._bodies)
        return record.prim_path

    def _posed_xform(self, name: str, pos, rot, what: str, *, scale=None, reference=None) -> _Body:
        """The _Body record of a new Xform prim `name` with translate and orient ops set to the initial pose (pos
        [stage units], rot (x, y, z, w)), which `write_frame` samples, then a fixed scale op when `scale` (a
        Gf.Vec3f) is given, and a reference to the USD file `reference`; pose and name are checked first, so that
        a bad one adds nothing to the stage. `what` names the prim in errors ("body", "reference").

        The prim is authored as the specs UsdGeom would write, in the root layer, and not at once: at the next
        read of the stage (`_stage`), together with every prim deferred since, in one change block. Each change
        recomposes the stage, at a cost that grows with the root's children, so that prims added one by one
        cost O(n^2): 2,048 referenced Xforms (Warp's example_mesh_intersect) took 0.29 ms each through UsdGeom's
        Define and AddXformOp, 0.05 ms each deferred."""
        translate_value = _vec3d(pos, f"{what} {name!r} pos")
        orient_value = _quatf(rot, f"{what} {name!r} rot")
        self._check_name_free(name)
        path = self._child_path(name)
        layer = self._usd_stage.GetRootLayer()
        ops = [("xformOp:translate", Sdf.ValueTypeNames.Double3, translate_value),
               ("xformOp:orient", Sdf.ValueTypeNames.Quatf, orient_value)]
        if scale is not None:
            ops.append(("xformOp:scale", Sdf.ValueTypeNames.Float3, scale))

        def author():
            spec = Sdf.CreatePrimInLayer(layer, path)
            spec.specifier = Sdf.SpecifierDef
            spec.typeName = "Xform"
            for op_name, value_type, value in ops:
                Sdf.AttributeSpec(spec, op_name, value_type).default = value
            Sdf.AttributeSpec(spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray,
                              variability=Sdf.VariabilityUniform).default = [op for op, _, _ in ops]
            if reference is not None:
                spec.referenceList.Append(Sdf.Reference(reference))

        self._deferred.append(author)
        attribute = Sdf.Path(path).AppendProperty
        return _Body(path, layer, attribute("xformOp:translate"), attribute("xformOp:orient"))

    @property
    def _stage(self) -> Usd.Stage:
        """The stage, with every deferred prim authored (see `_posed_xform`): every read goes through here."""
        self._author_deferred()
        return self._usd_stage

    def _author_deferred(self) -> None:
        if self._deferred:
            deferred, self._deferred = self._deferred, []
            with Sdf.ChangeBlock():
                for author in deferred:
                    author()

    # ---------------------------------------------------------------------------------------------- frames

    def set_layer_data(self, key: str, value) -> None:
        """Store `value` (a number, a string, or an array of 3-vectors of shape (n, 3)) under `key` in the root
        layer's customLayerData, for readers of the file (e.g. `sim:world_offsets` of a scene with worlds)."""
        self._check_open()
        layer = self._stage.GetRootLayer()
        data = dict(layer.customLayerData)
        if isinstance(value, np.ndarray):
            value = Vt.Vec3dArray.FromNumpy(np.ascontiguousarray(value, dtype=np.float64).reshape(-1, 3))
        data[key] = value
        layer.customLayerData = data

    def write_frame(self, frame: float, *, points: dict | None = None, bodies: dict | None = None) -> None:
        """Time samples of one frame. Prims not named keep their last sample (or their initial value).

        Args:
            frame: time code; must be greater than the previous frame written (gaps are allowed).
            points: name or prim path -> positions [stage units], shape (n, 3) with the prim's n, float32 or
                float64 (or any object with a `.numpy()` method, such as a kernels array).
            bodies: name or prim path -> (pos (3,) [stage units], quaternion (x, y, z, w)).

        Raises:
            ValueError: a frame not after the previous one, an unknown name, a wrong shape or a non-finite value.
                Everything is checked before anything is written, so a failed call leaves no partial frame.
        """
        self._check_open()
        time = float(frame)
        if not np.isfinite(time):
            raise ValueError(f"frame must be a finite number, got {frame!r}")
        if self._last_frame is not None and time <= self._last_frame:
            raise ValueError(f"frame {frame} is not after the previous frame {self._last_frame:g}: frames must be "
                             "written in increasing order")
        point_values = [(self._lookup(key, self._animated, "mesh or points"), value)
                        for key, value in (points or {}).items()]
        point_values = [(rec, as_points(v, f"frame {frame}: {rec.prim_path} points", rec.point_count))
                        for rec, v in point_values]
        pose_values = []
        for key, pose in (bodies or {}).items():
            rec = self._lookup(key, self._bodies, "body")
            try:
                body_pos, body_rot = pose
            except (TypeError, ValueError):
                raise ValueError(f"frame {frame}: body {key!r}: expected (pos, quat), got {pose!r}") from None
            what = f"frame {frame}: body {key!r}"
            pose_values.append((rec, _vec3d(body_pos, what + " pos"), _quatf(body_rot, what + " rot")))
        code = Usd.TimeCode(time)
        for rec, p in point_values:
            _write_points(rec, p, code)
        self._author_deferred()  # the samples' attributes
        for rec, translate, orient in pose_values:
            rec.layer.SetTimeSample(rec.translate, time, translate)
            rec.layer.SetTimeSample(rec.orient, time, orient)
        if self._first_frame is None:
            self._first_frame = time
        self._last_frame = time

    # ------------------------------------------------------------------------------------------- finishing

    def save(self) -> str:
        """Write the frames so far and stay open: export to a temporary file in the output's directory, then
        rename it over the output. `saved_frame` becomes the last frame written.

        Sets `startTimeCode`/`endTimeCode` to the first and last frames written (both 0 when none was). On an
        error (OutputWriteError for a failed write) the temporary file is removed and the output keeps its
        previous content: the last save's, or that of an earlier file.

        Returns:
            The output path.
        """
        self._check_open()
        self._stage.SetStartTimeCode(self._first_frame if self._first_frame is not None else 0.0)
        self._stage.SetEndTimeCode(self._last_frame if self._last_frame is not None else 0.0)
        # same directory, so the rename stays on one file system and is atomic; same extension, so Sdf picks the
        # file format from it; the pid in its name lets a later run remove it if this process is killed
        temporary = temporary_path(self.path)
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            remove_stale_temporaries(self.path)
            _export_layer(self._stage.GetRootLayer(), temporary, self._format)
            os.replace(temporary, self.path)
        except BaseException as e:
            _remove_quietly(temporary)
            if isinstance(e, OSError):
                raise write_failure(self.path, e) from None
            raise
        self.saved_frame = self._last_frame
        return self.path

    def close(self) -> str:
        """`save()` and close: the writer takes no more frames. On an error the writer stays open (close can be
        retried, or the writer aborted).

        Returns:
            The output path.
        """
        self.save()
        self._usd_stage, self._deferred = None, []
        return self.path

    def abort(self) -> None:
        """Discard everything; nothing is written. Safe to call more than once, or after `close`."""
        self._usd_stage, self._deferred = None, []

    @property
    def last_frame(self) -> float | None:
        """The last frame written with `write_frame`, or None."""
        return self._last_frame

    @property
    def closed(self) -> bool:
        """Whether `close` succeeded or `abort` was called."""
        return self._usd_stage is None

    def __enter__(self) -> UsdWriter:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # ------------------------------------------------------------------------------------------- internals

    def _check_open(self) -> None:
        if self._usd_stage is None:
            raise RuntimeError(f"UsdWriter for {self.path} is closed")

    def _child_path(self, name: str) -> str:
        self._check_open()
        return f"{self.root_path}/{unique_name(prim_identifier(str(name)), self._child_names)}"

    def _check_name_free(self, name: str) -> None:
        """Names of animated prims are `write_frame` keys, so they must be unambiguous."""
        if str(name).startswith("/"):
            raise ValueError(f"name {name!r}: names starting with '/' are reserved for prim paths")
        if str(name) in self._animated or str(name) in self._bodies:
            raise ValueError(f"name {name!r} is already used by another animated prim")

    def _register(self, name: str, record, table: dict) -> None:
        """Makes a prim addressable in `write_frame` by its given name and by its prim path."""
        table[str(name)] = record
        table[record.prim_path] = record

    def _lookup(self, key, table: dict, what: str):
        if key not in table:
            known = sorted(k for k in table if not k.startswith("/"))
            raise ValueError(f"no {what} named {key!r} (known: {', '.join(known) or 'none'})")
        return table[key]

    def _define_shape(self, prim_path: str, shape: dict) -> str:
        """Defines the UsdGeom prim of one checked shape (see `checked_shape`) at `prim_path`."""
        kind = shape["kind"]
        if kind == "sphere":
            gprim = UsdGeom.Sphere.Define(self._stage, prim_path)
            gprim.CreateRadiusAttr(shape["radius"])
        elif kind == "box":
            gprim = UsdGeom.Cube.Define(self._stage, prim_path)
            gprim.CreateSizeAttr(2.0)  # the unit half extent that the scale op stretches to (hx, hy, hz)
        elif kind == "capsule":
            gprim = UsdGeom.Capsule.Define(self._stage, prim_path)
            gprim.CreateAxisAttr(UsdGeom.Tokens.y)
            gprim.CreateRadiusAttr(shape["radius"])
            gprim.CreateHeightAttr(2.0 * shape["half_height"])
        elif kind == "mesh":
            gprim = UsdGeom.Mesh.Define(self._stage, prim_path)
            faces = shape["faces"]
            gprim.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), faces.shape[1], np.int32)))
            gprim.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.ascontiguousarray(faces.ravel())))
            gprim.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(shape["points"], np.float32)))
            gprim.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)  # the polygons as modelled, not smoothed
        else:
            gprim = UsdGeom.Plane.Define(self._stage, prim_path)
            gprim.CreateAxisAttr(UsdGeom.Tokens.y)
            gprim.CreateWidthAttr(2.0 * shape["width"] if shape["width"] > 0 else self.infinite_plane_size)
            gprim.CreateLengthAttr(2.0 * shape["length"] if shape["length"] > 0 else self.infinite_plane_size)
            gprim.CreateDoubleSidedAttr(True)
        gprim.AddTranslateOp().Set(shape["pos"])
        gprim.AddOrientOp(UsdGeom.XformOp.PrecisionFloat).Set(shape["rot"])
        if kind in ("box", "mesh"):
            gprim.AddScaleOp().Set(Gf.Vec3f(*shape["half_extents" if kind == "box" else "scale"]))
        _set_color(gprim, shape["color"])
        gprim.CreateExtentAttr(UsdGeom.Boundable.ComputeExtentFromPlugins(gprim, Usd.TimeCode.Default()))
        return str(gprim.GetPath())


def vertex_normals(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals, shape (n, 3) float64; (0, 0, 0) at vertices of no (non-degenerate) face.

    Args:
        points: vertex positions, shape (n, 3).
        triangles: counter-clockwise vertex indices, shape (m, 3).
    """
    p = np.asarray(points, dtype=np.float64)
    t = np.asarray(triangles)
    # the unnormalised cross product is twice the triangle's area along its normal: area weighting for free
    face = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    corners = t.ravel()
    weights = np.repeat(face, 3, axis=0)
    n = np.stack([np.bincount(corners, weights=weights[:, d], minlength=len(p)) for d in range(3)], axis=1)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.divide(n, length, out=np.zeros_like(n), where=length > 0)


# --------------------------------------------------------------------------------------------------- helpers


def _export_layer(layer: Sdf.Layer, path: str, file_format: str) -> None:
    """Writes `layer` to `path` in `file_format` ("usda" or "usdc") and flushes it to disk; OSError with the cause
    when that fails (USD's own errors, thousands of lines on a full disk, are summed up in one)."""
    try:
        exported = layer.Export(path, args={"format": file_format})
    except Tf.ErrorException as e:
        raise OSError(write_cause(os.path.dirname(path), str(e))) from None
    if not exported:
        raise OSError(write_cause(os.path.dirname(path), "USD could not export it"))
    # the rename is only as durable as the data it points to
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def prim_identifier(name: str) -> str:
    """A valid USD prim name from `name`: other characters than ASCII letters, digits and _ become _."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + text if text[0].isdigit() else text


def unique_name(name: str, used: set[str]) -> str:
    """`name`, or `name_1`, `name_2`, ... the first not in `used`; adds it to `used`."""
    candidate, i = name, 0
    while candidate in used:
        i += 1
        candidate = f"{name}_{i}"
    used.add(candidate)
    return candidate


def as_points(value, what: str, count: int | None = None) -> np.ndarray:
    """`value` as a finite float32 or float64 array of shape (n, 3), n >= 1 (or `count`)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    p = np.asarray(value)
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(np.float64)
    expected = "(n, 3), n >= 1" if count is None else f"({count}, 3)"
    if p.ndim != 2 or p.shape[1] != 3 or len(p) == 0 or (count is not None and len(p) != count):
        raise ValueError(f"{what}: expected shape {expected}, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{what}: {int((~np.isfinite(p)).any(axis=1).sum())} point(s) are not finite")
    return p


def as_faces(value, vertex_count: int, what: str) -> np.ndarray:
    f = np.asarray(value)
    if f.ndim != 2 or f.shape[1] < 3 or len(f) == 0 or not np.issubdtype(f.dtype, np.integer):
        raise ValueError(f"{what}: expected integer indices of shape (m, k), m >= 1, k >= 3, got {f.dtype} "
                         f"{f.shape}")
    if f.min() < 0 or f.max() >= vertex_count:
        raise ValueError(f"{what}: indices must lie in [0, {vertex_count}), got [{f.min()}, {f.max()}]")
    return f.astype(np.int32)


def fan_faces(faces: np.ndarray) -> np.ndarray:
    """(m, k) polygons -> (m * (k - 2), 3) triangles (0, i, i + 1)."""
    k = faces.shape[1]
    return np.concatenate([faces[:, [0, i, i + 1]] for i in range(1, k - 1)])


def _write_points(record: _Animated, p: np.ndarray, time: Usd.TimeCode) -> None:
    record.points.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(p, dtype=np.float32)), time)
    pad = record.max_radius
    low, high = p.min(axis=0) - pad, p.max(axis=0) + pad
    record.extent.Set(Vt.Vec3fArray([Gf.Vec3f(*map(float, low)), Gf.Vec3f(*map(float, high))]), time)
    if record.normals is not None:
        normals = vertex_normals(p, record.triangles).astype(np.float32)
        record.normals.Set(Vt.Vec3fArray.FromNumpy(normals), time)


def _floats(value, count: int) -> tuple | None:
    """`value` as `count` finite Python floats, or None. Plain Python first: the writer checks every pose of every
    frame (2,486 of them a frame in Warp's mesh_intersect example), where numpy's per-call cost dominated."""
    try:
        if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
            value = value.numpy()
        if isinstance(value, np.ndarray) and value.ndim != 1:
            return None
        out = tuple(float(c) for c in value)
    except (TypeError, ValueError):
        return None
    if len(out) != count or not all(math.isfinite(c) for c in out):
        return None
    return out


def _vec3d(value, what: str) -> Gf.Vec3d:
    v = _floats(value, 3)
    if v is None:
        raise ValueError(f"{what}: expected 3 finite numbers, got {value!r}")
    return Gf.Vec3d(*v)


def _quatf(value, what: str) -> Gf.Quatf:
    """(x, y, z, w) -> the normalised Gf.Quatf(w, (x, y, z)) (Gf puts the real part first)."""
    q = _floats(value, 4)
    if q is None:
        raise ValueError(f"{what}: expected a quaternion (x, y, z, w), got {value!r}")
    norm = math.sqrt(sum(c * c for c in q))
    if norm < 1e-12:
        raise ValueError(f"{what}: the zero quaternion is not a rotation")
    x, y, z, w = (c / norm for c in q)
    return Gf.Quatf(w, Gf.Vec3f(x, y, z))


def checked_shape(spec, what: str) -> dict:
    """A shape description (see `UsdWriter.add_collider`) checked and converted: kind, name, pos (Gf.Vec3d), rot
    (Gf.Quatf), color (Gf.Vec3f or None) and the kind's size parameters, floats in stage units."""
    if not isinstance(spec, dict):
        raise ValueError(f"{what}: expected a dict describing a shape, got {type(spec).__name__}")
    kind = spec.get("kind")
    if kind not in SHAPE_PARAMETERS:
        raise ValueError(f"{what}: kind must be one of {', '.join(SHAPE_PARAMETERS)}, got {kind!r}")
    what = f"{what} ({kind})"
    unknown = set(spec) - set(SHAPE_PARAMETERS[kind]) - set(_SHAPE_COMMON_KEYS)
    if unknown:
        raise ValueError(f"{what}: unknown parameter(s) {', '.join(sorted(unknown))}; a {kind} takes "
                         f"{', '.join(SHAPE_PARAMETERS[kind])}")
    shape = {"kind": kind, "name": spec.get("name"), "pos": _vec3d(spec.get("pos", (0.0, 0.0, 0.0)), f"{what} pos"),
             "rot": _quatf(spec.get("rot", (0.0, 0.0, 0.0, 1.0)), f"{what} rot"),
             "color": _color(spec.get("color"), what)}
    if kind == "mesh":
        if "points" not in spec or "faces" not in spec:
            raise ValueError(f"{what}: missing parameter {'points' if 'points' not in spec else 'faces'!r}")
        shape["points"] = as_points(spec["points"], f"{what} points")
        shape["faces"] = as_faces(spec["faces"], len(shape["points"]), f"{what} faces")
        shape["scale"] = _size(spec, "scale", what, shape=(3,), positive=True, default=(1.0, 1.0, 1.0))
    elif kind == "sphere":
        shape["radius"] = _size(spec, "radius", what, positive=True)
    elif kind == "box":
        shape["half_extents"] = _size(spec, "half_extents", what, shape=(3,), positive=True)
    elif kind == "capsule":
        shape["radius"] = _size(spec, "radius", what, positive=True)
        shape["half_height"] = _size(spec, "half_height", what)
    else:
        shape["width"] = _size(spec, "width", what, default=0.0)
        shape["length"] = _size(spec, "length", what, default=0.0)
    return shape


def _size(spec: dict, key: str, what: str, *, shape=(), positive: bool = False, default=None):
    """The size parameter `key` of a shape spec, checked: finite, non-negative (positive when asked)."""
    if key not in spec:
        if default is None:
            raise ValueError(f"{what}: missing parameter {key!r}")
        return default
    v = np.asarray(spec[key], dtype=np.float64)
    bad = v.shape != shape or not np.all(np.isfinite(v)) or np.any(v <= 0 if positive else v < 0)
    if bad:
        rule = "positive" if positive else "non-negative"
        count = f"{shape[0]} " if shape else "a "
        raise ValueError(f"{what}: {key} must be {count}{rule} number{'s' if shape else ''}, got {spec[key]!r}")
    return float(v) if not shape else tuple(float(c) for c in v)


def _color(value, what: str) -> Gf.Vec3f | None:
    if value is None:
        return None
    c = np.asarray(value, dtype=np.float64)
    if c.shape != (3,) or not np.all(np.isfinite(c)):
        raise ValueError(f"{what}: color must be (r, g, b), got {value!r}")
    return Gf.Vec3f(*map(float, c))


def _set_color(gprim: UsdGeom.Gprim, color: Gf.Vec3f | None) -> None:
    if color is not None:
        gprim.CreateDisplayColorPrimvar(UsdGeom.Tokens.constant).Set(Vt.Vec3fArray([color]))


def validation_errors(path) -> list:
    """Errors and warnings USD's own checkers report for the file at `path` (empty: the file is compliant).
    Uses UsdUtils.ComplianceChecker where it exists, else every registered UsdValidation validator (the
    checker's replacement since usd-core 25)."""
    from pxr import UsdUtils
    if hasattr(UsdUtils, "ComplianceChecker"):
        checker = UsdUtils.ComplianceChecker()
        checker.CheckCompliance(str(path))
        return list(checker.GetErrors()) + list(checker.GetFailedChecks())
    from pxr import UsdValidation
    context = UsdValidation.ValidationContext(UsdValidation.ValidationRegistry().GetOrLoadAllValidators())
    errors = context.Validate(Usd.Stage.Open(str(path)))
    return [f"{e.GetName()}: {e.GetMessage()}" for e in errors
            if e.GetType() in (UsdValidation.ValidationErrorType.Error, UsdValidation.ValidationErrorType.Warn)]
