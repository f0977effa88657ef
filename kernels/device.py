"""Devices: "cpu" and "cuda:N", with Warp's selection API (get_device, set_device, ScopedDevice)."""

from __future__ import annotations


class Device:
    """A compute device. `alias` is its name: "cpu" or "cuda:N"."""

    def __init__(self, alias: str):
        self.alias = alias
        self.is_cpu = alias == "cpu"
        self.is_cuda = alias.startswith("cuda")
        self.ordinal = int(alias.split(":")[1]) if self.is_cuda else -1

    def __str__(self):
        return self.alias

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
    get_device(device)
    synchronize()
