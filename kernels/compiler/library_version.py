"""Which toolkit version a native runtime library was built for: every library of kernels/native/ exports
`kernels_library_version()` (added by build.load_native_library), checked against `config.version` when it is
loaded, so a library of another installation is never run in its place."""

from __future__ import annotations

import ctypes

#: The exported function returning the version (a NUL-terminated UTF-8 string).
SYMBOL = "kernels_library_version"


def version_source(version: str) -> str:
    """C++ text that makes a library export SYMBOL returning `version`."""
    return (f'\nextern "C" __attribute__((visibility("default"))) const char* {SYMBOL}() '
            f'{{ return "{version}"; }}\n')


def read_library_version(lib, library_name: str, version_symbol: str) -> str:
    """The version a loaded library reports through its no-argument function `version_symbol`.

    Raises:
        RuntimeError: the symbol is missing, the call fails, or it returns NULL or an empty string.
    """
    function = getattr(lib, version_symbol, None)
    if function is None:
        raise RuntimeError(f"The {library_name} native library does not export the version symbol "
                           f"'{version_symbol}'.")
    function.argtypes = []
    function.restype = ctypes.c_char_p
    try:
        raw = function()
        text = raw.decode("utf-8") if raw else ""
    except Exception as e:
        raise RuntimeError(f"Failed to read the {library_name} native library version.") from e
    if not text:
        raise RuntimeError(f"The {library_name} native library returned an empty version string.")
    return text


def verify_library_version(lib, library_name: str, version_symbol: str, expected: str) -> None:
    """Raise unless the loaded library `lib` reports version `expected` (see read_library_version).

    Raises:
        RuntimeError: the version cannot be read, or it differs ("Version mismatch", both versions named).
    """
    loaded = read_library_version(lib, library_name, version_symbol)
    if loaded != expected:
        raise RuntimeError(
            f"Version mismatch detected in the {library_name} native library: expected version {expected}, the "
            f"loaded library is version {loaded}. A library of another installation was found first (multiple "
            "Warp installations, or environment variables pointing at another one); reinstall, or clear the "
            "kernel cache, so that the library matches the Python package.")
