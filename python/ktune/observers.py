"""Kernel Tuner's observers that ktune serves: `from ktune.observers import RegisterObserver,
NVMLObserver` (was `from kernel_tuner.observers.register import RegisterObserver` and
`from kernel_tuner.observers.nvml import NVMLObserver`)."""

# NVMLObserver's observables ktune records for every measured configuration, by the trial field
# that holds each; and those it does not record yet, with why.
NVML_SERVED = {"core_freq": "sm_clock_mhz", "temperature": "temperature_c",
               "nvml_energy": "energy_j", "nvml_power": "power_w"}
# Those that need each configuration's energy measured (a sustained run of it, read through
# NVML's energy counter: docs/energy.md).
NVML_ENERGY = {"nvml_energy", "nvml_power"}
NVML_NOT_SERVED = {
    "power_readings": "the power readings over time are not kept (nvml_power, their mean, is)",
    "mem_freq": "the memory clock is not recorded",
    "gr_voltage": "the graphics voltage is not recorded",
}


class RegisterObserver:
    """tune_kernel(..., observers=[RegisterObserver()]) adds num_regs to each result: the
    registers per thread of the configuration's compiled kernel, which ktune records for every
    trial (None where none were recorded, as in a replayed cache)."""


class NVMLObserver:
    """tune_kernel(..., observers=[NVMLObserver(["core_freq", "temperature", "nvml_energy",
    "nvml_power"])]) adds those readings to each result: the GPU's SM clock (MHz) and
    temperature (degrees C), which ktune reads through NVML, read-only, right after each
    configuration's timed samples; the energy of one run (J) and the board's mean power (W),
    for which each configuration runs back to back for 300 ms of GPU time while NVML's energy
    counter is read. None where they were not read: no NVML, or a cache that has none. ktune
    never changes a clock or a power limit, so the arguments that would (use_locked_clocks) do
    nothing here."""

    def __init__(self, observables, device=None, save_all=False, nvidia_smi_fallback=None,
                 use_locked_clocks=False, continuous_duration=1):
        self.observables = list(observables)
        self.device = device
