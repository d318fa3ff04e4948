"""ktune from Python: Kernel Tuner's tune_kernel over ktune's engine (docs/python.md).

A script written for Kernel Tuner switches with its import line:

    from ktune import tune_kernel          # and run_kernel

Results also go to ktune's SQLite database (db=, default $KTUNE_DB or ./ktune.db), which
ktune.best() and ktune.Client read as the C++ run-time client does.
"""

from ._ktune import Error, version
from . import observers
from .interface import Client, KtuneError, best, default_db, run_kernel, tune_kernel

__version__ = version()
__all__ = ["tune_kernel", "run_kernel", "best", "Client", "Error", "KtuneError", "default_db"]
