"""Robots from files into a ModelBuilder: `import_urdf` (URDF) and `import_usd_physics` (UsdPhysics schemas).

Both return an ImportResult (body and joint indices by name, visual geometry, what was not imported) and raise
ImporterError naming the file, the element and what was expected. Supported and refused: docs/articulations.md.
"""

from .assembly import ImporterError, ImportResult, ImportWarning, VisualSpec
from .urdf import import_urdf
from .usd_physics import import_usd_physics

__all__ = ["import_urdf", "import_usd_physics", "ImporterError", "ImportResult", "ImportWarning", "VisualSpec"]
