"""autodiff: reverse-mode differentiation of kernel launches (Tape), gradient checking, optimisers."""

from .gradcheck import GradcheckReport, gradcheck
from .tape import MissingGradientError, OverwriteError, Tape
from .optim import SGD, Adam, Optimizer
from .checkpoint import CheckpointedRollout, clone_state, state_bytes

__all__ = ["Tape", "gradcheck", "GradcheckReport", "MissingGradientError", "OverwriteError", "SGD", "Adam",
           "Optimizer", "CheckpointedRollout", "clone_state", "state_bytes"]
