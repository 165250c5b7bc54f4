"""The GPU's clocks, power, temperature and load, read from NVIDIA's driver library (`libnvidia-ml`) through
ctypes: the GPU box installs nothing, and the driver ships the library wherever a GPU runs.

    reading = nvml.Reader.open()   # None where there is no NVIDIA driver (a CPU machine)
    reading.read() -> {"sm_mhz": 1980, "power_w": 412.5, "temp_c": 51, "utilization": 97, "throttle": 0}

Which GPU: the first one CUDA_VISIBLE_DEVICES names by index, else index 0 (the GPU box has one GPU; NVML
counts GPUs in PCI order, CUDA by speed unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so on a box of several the two
may differ). `throttle` is NVML's bitmask of the reasons the clocks are held down (0: none; 1 is "idle").
Standard library only.
"""

from __future__ import annotations

import ctypes
import os

NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


def _index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


class Reader:
    """One GPU's live readings. `open()` gives None where NVML cannot be loaded or started."""

    def __init__(self, library, handle):
        self.library, self.handle = library, handle

    @classmethod
    def open(cls, name: str = "libnvidia-ml.so.1") -> Reader | None:
        try:
            library = ctypes.CDLL(name)
            if library.nvmlInit_v2() != 0:
                return None
            handle = ctypes.c_void_p()
            if library.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(_index()), ctypes.byref(handle)) != 0:
                return None
        except (OSError, AttributeError):
            return None
        return cls(library, handle)

    def _uint(self, function: str, *args) -> int | None:
        value = ctypes.c_uint()
        try:
            status = getattr(self.library, function)(self.handle, *args, ctypes.byref(value))
        except AttributeError:  # an older driver without it
            return None
        return value.value if status == 0 else None

    def read(self) -> dict:
        """What the GPU reads now; a value the driver does not give is None."""
        power = self._uint("nvmlDeviceGetPowerUsage")
        utilization = _Utilization()
        status = self.library.nvmlDeviceGetUtilizationRates(self.handle, ctypes.byref(utilization))
        reasons = ctypes.c_ulonglong()
        try:
            throttled = self.library.nvmlDeviceGetCurrentClocksThrottleReasons(self.handle, ctypes.byref(reasons))
        except AttributeError:
            throttled = 1
        return {
            "sm_mhz": self._uint("nvmlDeviceGetClockInfo", ctypes.c_int(NVML_CLOCK_SM)),
            "power_w": None if power is None else power / 1000,
            "temp_c": self._uint("nvmlDeviceGetTemperature", ctypes.c_int(NVML_TEMPERATURE_GPU)),
            "utilization": utilization.gpu if status == 0 else None,
            "throttle": reasons.value if throttled == 0 else None,
        }
