"""Robots from files into a ModelBuilder: `import_urdf` (URDF), `import_usd_physics` (UsdPhysics schemas) and
`import_mjcf` (MuJoCo's MJCF, through the `mujoco` package, imported only when called).

Both return an ImportResult (body and joint indices by name, visual geometry, what was not imported) and raise
ImporterError naming the file, the element and what was expected. Supported and refused: docs/articulations.md.
"""

from .assembly import ImporterError, ImportResult, ImportWarning, VisualSpec
from .mjcf import import_mjcf
from .urdf import import_urdf
from .usd_physics import import_usd_physics

__all__ = ["import_urdf", "import_usd_physics", "import_mjcf", "ImporterError", "ImportResult", "ImportWarning",
           "VisualSpec"]
