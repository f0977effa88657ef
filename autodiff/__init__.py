"""autodiff: reverse-mode differentiation of kernel launches (Tape), gradient checking, optimisers."""

from .gradcheck import GradcheckReport, gradcheck
from .tape import MissingGradientError, OverwriteError, Tape

__all__ = ["Tape", "gradcheck", "GradcheckReport", "MissingGradientError", "OverwriteError"]
