"""The exceptions of the assoc package: all are assoc.Error."""


class Error(Exception):
    """Anything the library refuses."""


class LibraryError(Error, OSError):
    """libassoc.so cannot be found or loaded; the message lists the paths tried."""


class SpecError(Error, ValueError):
    """A spec that does not load; the message is the library's
    `file:line:col: error: ...` diagnostic."""


class LawError(Error):
    """A carrier whose laws or reference fail, refused by compile, or by a
    call whose params' values make them fail."""


class DeviceError(Error):
    """The device is unknown or not usable here (no CUDA driver, no CPU backend)."""


class CompileError(Error):
    """Code generation failed for the device."""


class RunError(Error):
    """A run the library refused or could not finish."""


for _cls in (Error, LibraryError, SpecError, LawError, DeviceError, CompileError, RunError):
    _cls.__module__ = "assoc"  # shown as assoc.SpecError, as the package exports them
