"""autodiff: reverse-mode differentiation of kernel launches (Tape), gradient checking, optimisers."""

from .gradcheck import GradcheckReport, gradcheck
from .tape import Tape

__all__ = ["Tape", "gradcheck", "GradcheckReport"]
