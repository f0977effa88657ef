"""Devices: "cpu" and "cuda:N", with Warp's selection API (get_device, set_device, ScopedDevice)."""

from __future__ import annotations

from .recording import capturing


class Device:
    """A compute device. `alias` is its name: "cpu" or "cuda:N"."""

    def __init__(self, alias: str):
        self.alias = alias
        self.is_cpu = alias == "cpu"
        self.is_cuda = alias.startswith("cuda")
        self.ordinal = int(alias.split(":")[1]) if self.is_cuda else -1

    def __str__(self):
        return self.alias

    # ---- what Warp's Device tells of a GPU (the CPU answers too, as in Warp)

    def _info(self):
        from . import cuda_driver
        return cuda_driver.info(self.ordinal)

    @property
    def name(self) -> str:
        """The GPU's model ("NVIDIA H100 80GB HBM3"), or the CPU's architecture."""
        if self.is_cpu:
            import platform
            return platform.processor() or platform.machine() or "CPU"
        return self._info().name

    @property
    def arch(self) -> int:
        """Compute capability as an int (90 for sm_90); 0 on the CPU."""
        return self._info().arch if self.is_cuda else 0

    @property
    def sm_count(self) -> int:
        return self._info().sm_count if self.is_cuda else 0

    @property
    def total_memory(self) -> int:
        """Device memory in bytes (the CPU: 0, as its memory is the host's)."""
        return self._info().total_memory if self.is_cuda else 0

    @property
    def free_memory(self) -> int:
        if not self.is_cuda:
            return 0
        from . import cuda_driver
        return cuda_driver.mem_info(self.ordinal)[0]

    @property
    def is_uva(self) -> bool:
        return self.is_cuda

    @property
    def is_capturing(self) -> bool:
        return capturing(self.alias)

    @property
    def stream(self):
        """The device's current stream (CUDA devices only)."""
        from .stream import get_stream
        return get_stream(self)

    def synchronize(self):
        synchronize_device(self)

    @property
    def context(self):
        """The primary CUDA context (a cuda-python CUcontext), None on the CPU."""
        return self._info().context if self.is_cuda else None

    def __repr__(self):
        return f'Device("{self.alias}")'

    def __eq__(self, other):
        if isinstance(other, str):
            return self.alias == other
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)


_devices = {"cpu": Device("cpu")}
_default = _devices["cpu"]


def get_cuda_device_count() -> int:
    """Number of CUDA devices usable by this process (0 without a GPU or driver)."""
    from . import cuda_driver
    return cuda_driver.device_count()


def get_device(ident=None) -> Device:
    """The device named by `ident` ("cpu", "cuda", "cuda:N", a Device), or the current default when None."""
    if ident is None:
        return _default
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a name like 'cpu' or 'cuda:0', got {ident!r}")
    if ident == "cuda":
        ident = "cuda:0"
    dev = _devices.get(ident)
    if dev is None:
        if ident.startswith("cuda:") and ident[5:].isdigit():
            if int(ident[5:]) >= get_cuda_device_count():
                raise RuntimeError(f"device '{ident}' is not available: this machine has "
                                   f"{get_cuda_device_count()} CUDA device(s)")
            dev = _devices[ident] = Device(ident)
        else:
            raise ValueError(f"unknown device '{ident}': use 'cpu' or 'cuda:N'")
    return dev


def set_device(ident):
    """Make `ident` the default device for allocations and launches."""
    global _default
    _default = get_device(ident)


def get_preferred_device() -> Device:
    return get_device("cuda:0") if get_cuda_device_count() > 0 else _devices["cpu"]


def is_cuda_available() -> bool:
    return get_cuda_device_count() > 0


def get_cuda_devices() -> list:
    """The CUDA devices of this machine (cuda:0, cuda:1, ...); empty without one."""
    return [get_device(f"cuda:{i}") for i in range(get_cuda_device_count())]


def get_devices() -> list:
    """Every device of this machine: the CPU, then the CUDA devices."""
    return [_devices["cpu"]] + get_cuda_devices()


def is_device_available(device) -> bool:
    """Whether `device` (a Device or its name) is one of get_devices()."""
    name = str(device)
    return any(str(d) == name for d in get_devices())


def is_cpu_available() -> bool:
    """The CPU backend needs a C++ compiler, which the toolkit requires: always true."""
    return True


class ScopedDevice:
    """`with wp.ScopedDevice("cpu"):` sets the default device inside the block."""

    def __init__(self, ident):
        self.device = get_device(ident)

    def __enter__(self):
        global _default
        self.saved, _default = _default, self.device
        return self.device

    def __exit__(self, *exc):
        global _default
        _default = self.saved


def synchronize():
    """Wait for all work on all devices; CPU launches are synchronous, so this only waits for CUDA work."""
    from . import cuda_driver
    cuda_driver.synchronize_all()


def synchronize_device(device=None):
    """Wait for all work queued on `device` (nothing to wait for on the CPU)."""
    dev = get_device(device)
    if dev.is_cuda:
        from . import cuda_driver
        cuda_driver.synchronize_device(dev.ordinal)
