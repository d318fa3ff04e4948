"""Kernel Tuner's observers that ktune serves: `from ktune.observers import RegisterObserver`
(was `from kernel_tuner.observers.register import RegisterObserver`)."""


class RegisterObserver:
    """tune_kernel(..., observers=[RegisterObserver()]) adds num_regs to each result: the
    registers per thread of the configuration's compiled kernel, which ktune records for every
    trial (None where none were recorded, as in a replayed cache)."""
