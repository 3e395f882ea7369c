"""weft's errors as Python exceptions.

Every failing weft call raises a subclass of :class:`WeftError` chosen by
the weft error code (``WEFT_EINVAL`` raises :class:`InvalidArgument`, which
is also a ``ValueError``, and so on). The exception carries the code, its
name, the driver involved with the driver's own code and name where weft
gives them, and the whole message of ``weft_last_error()``.
"""

from . import _lib


class WeftError(Exception):
    """A weft call failed.

    Attributes: ``code`` (the negative weft code), ``name`` (``"WEFT_EINVAL"``),
    ``driver`` (``"cuda"``, ``"opencl"``, ``"host"``, ``"sim"`` or None),
    ``driver_code`` (the driver's own code, 0 if none), ``driver_name`` (e.g.
    ``"CUDA_ERROR_OUT_OF_MEMORY"``, or ""), and ``message`` (weft's detail
    line, naming the object or argument concerned).
    """

    code = 0

    def __init__(self, code, message, driver=None, driver_code=0,
                 driver_name=""):
        self.code = code
        self.name = _lib.lib.weft_err_name(code).decode()
        self.message = message
        self.driver = driver
        self.driver_code = driver_code
        self.driver_name = driver_name
        super().__init__("%s: %s" % (self.name, message))


def _cls(name, code, doc, *bases):
    return type(name, (WeftError,) + bases, {"code": code, "__doc__": doc})


InvalidArgument = _cls("InvalidArgument", -1, "WEFT_EINVAL: an invalid argument.", ValueError)
OutOfMemory = _cls("OutOfMemory", -2, "WEFT_ENOMEM: out of host memory.", MemoryError)
OutOfDeviceMemory = _cls("OutOfDeviceMemory", -3, "WEFT_EDEVMEM: out of device memory.")
NoDevice = _cls("NoDevice", -4, "WEFT_ENODEV: no such device (or none that fits).")
NotSupported = _cls("NotSupported", -5, "WEFT_ENOTSUP: not supported by this device or driver.")
Busy = _cls("Busy", -6, "WEFT_EBUSY: the object is in use.")
NotFound = _cls("NotFound", -7, "WEFT_ENOTFOUND: not found (a kernel name, say).", LookupError)
OutOfRange = _cls("OutOfRange", -8, "WEFT_ERANGE: a range outside its buffer.", IndexError)
BadArguments = _cls("BadArguments", -9, "WEFT_EARGS: kernel arguments that do not match the kernel.", TypeError)
BuildFailed = _cls("BuildFailed", -10, "WEFT_EBUILD: kernel compilation failed; the message has the log.")
DriverFailure = _cls("DriverFailure", -11, "WEFT_EDRIVER: the driver failed (see driver_code).")
Destroyed = _cls("Destroyed", -12, "WEFT_EDESTROYED: the object was destroyed (or closed).")
NotReady = _cls("NotReady", -13, "WEFT_ENOTREADY: not complete yet.")
TimedOut = _cls("TimedOut", -14, "WEFT_ETIMEDOUT: timed out.", TimeoutError)
IOFailure = _cls("IOFailure", -15, "WEFT_EIO: an input/output error, or a host task that failed.")
Cycle = _cls("Cycle", -16, "WEFT_ECYCLE: the edge would close a dependency cycle.")
Canceled = _cls("Canceled", -17, "WEFT_ECANCELED: canceled because a dependency failed.")
DeviceLost = _cls("DeviceLost", -18, "WEFT_EDEVLOST: the device was lost.")
BadState = _cls("BadState", -19, "WEFT_ESTATE: not valid in the object's current state.")
Internal = _cls("Internal", -20, "WEFT_EINTERNAL: an internal error in weft.")

_BY_CODE = {c.code: c for c in (
    InvalidArgument, OutOfMemory, OutOfDeviceMemory, NoDevice, NotSupported,
    Busy, NotFound, OutOfRange, BadArguments, BuildFailed, DriverFailure,
    Destroyed, NotReady, TimedOut, IOFailure, Cycle, Canceled, DeviceLost,
    BadState, Internal)}


def error_class(code):
    """The exception class for a weft error code (WeftError if unknown)."""
    return _BY_CODE.get(code, WeftError)


def _s(b):
    return b.decode(errors="replace") if b else None


def from_last(code):
    """The exception for a call that returned code, with this thread's detail."""
    d = _lib.lib.weft_last_error_detail()
    if d:
        d = d.contents
        msg = _s(d.message) or _lib.lib.weft_strerror(code).decode()
        return error_class(code)(code, msg, _s(d.driver), d.driver_code,
                                 _s(d.driver_name) or "")
    return error_class(code)(code, _lib.lib.weft_strerror(code).decode())


def check(rc):
    """Raise the exception for rc if it is negative; return rc otherwise."""
    if rc < 0:
        raise from_last(rc)
    return rc


def destroyed(what):
    """The exception for a use of a closed object."""
    return Destroyed(-12, "%s was closed" % what)
