"""weft: a task-graph runtime for GPUs, from Python.

A thin layer over libweft (through ctypes): a :class:`Runtime` finds the
devices; buffers wrap NumPy arrays without copying; modules are built from
source strings (the portable dialect, OpenCL C, CUDA C++); a :class:`Graph`
of kernel, transfer and host nodes is instantiated once into an
:class:`Exec` and launched many times. weft infers the dependencies from the
buffer accesses and places the nodes on the devices::

    import numpy as np, weft
    src = '''WEFT_KERNEL void twice(WEFT_GLOBAL float *a, weft_u32 n)
             { long i = weft_global_id(0); if (i < n) a[i] *= 2; }'''
    a = np.arange(1000, dtype=np.float32)
    with weft.Runtime() as rt:
        k = rt.module(src).kernel("twice")
        buf = rt.wrap(a)
        g = rt.graph()
        g.kernel(k, a.size, buf, np.uint32(a.size))
        g.instantiate().run()
        buf.sync()              # a now holds the doubled values

Every weft error raises a :class:`WeftError` (see :mod:`weft.errors`).
Objects are released when collected, or when closed (``close()`` or a
``with`` block), in any order: an object that another still uses (a buffer
that a graph names, a runtime with buffers) is destroyed in C once the last
user is gone, so weft never sees a destroy it would refuse and nothing is
used after it was freed. A closed object refuses further use
(:class:`weft.errors.Destroyed`).
"""

import atexit
import collections
import ctypes
import enum
import os
import struct
import tempfile
import threading
import weakref

import numpy as np

from . import _lib
from .errors import (WeftError, check, destroyed, from_last, error_class,  # noqa: F401
                     InvalidArgument, OutOfMemory, OutOfDeviceMemory, NoDevice,
                     NotSupported, Busy, NotFound, OutOfRange, BadArguments,
                     BuildFailed, DriverFailure, Destroyed, NotReady, TimedOut,
                     IOFailure, Cycle, Canceled, DeviceLost, BadState, Internal)

_L = _lib.lib
# weft_graph_add_kernel without argtypes (a separate function object), for
# the graph-building path: it is given c_void_p handles, a weft_dims by
# value, an Arg array, an int and a byref, which ctypes passes as they are
# without the per-argument conversion checks (about 0.3 us a call).
_add_kernel = _L["weft_graph_add_kernel"]
_add_kernel.restype = ctypes.c_int
_exec_launch = _L["weft_exec_launch"]     # unprototyped as well: given a
_exec_launch.restype = ctypes.c_int       # c_void_p (Exec._cp)
_exec_wait = _L["weft_exec_wait"]
_exec_wait.restype = ctypes.c_int
_add_write = _L.weft_graph_add_write
_add_read = _L.weft_graph_add_read
_byref = ctypes.byref
_addressof = ctypes.addressof
_char_at = ctypes.c_char.from_buffer


def _address(a):
    """The address of a NumPy array's first byte."""
    try:
        # A writeable, C-contiguous, non-empty array: a quarter of the cost
        # of a.ctypes.data (which makes an object of numpy's each time).
        return _addressof(_char_at(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


_c_void_p = ctypes.c_void_p
_c_uint32 = ctypes.c_uint32

__all__ = [
    "Runtime", "Device", "Driver", "Module", "Kernel", "Buffer", "Region",
    "Access", "Graph", "Exec", "Local", "Param", "NativeContext", "read",
    "write", "rw", "local", "native_handle",
    "AccessMode", "DeviceType", "SourceKind", "PlacePolicy",
    "PlaceScope", "NativeGraphs", "Priority", "LogLevel", "ParamType",
    "WeftError", "version", "strerror", "err_name", "last_error",
    "set_log_level", "get_log_level", "set_log_sink", "param_type_size",
    "param_type_name", "place_policy_name", "library_path", "WHOLE",
]

WHOLE = _lib.WHOLE
"""A size meaning "to the end of the buffer" (WEFT_WHOLE)."""

library_path = _lib.path
"""The path of the libweft that was loaded."""


class AccessMode(enum.IntEnum):
    """How a node uses bytes of a buffer (weft_access)."""

    READ = 1
    WRITE = 2
    READ_WRITE = 3


class DeviceType(enum.IntEnum):
    """The kind of a device (weft_device_type)."""

    GPU = 1
    CPU = 2
    ACCELERATOR = 3
    SIMULATED = 4


class SourceKind(enum.IntEnum):
    """The forms a module's code takes (weft_source_kind)."""

    PORTABLE = 1
    OPENCL_C = 2
    SPIRV = 3
    CL_BINARY = 4
    CUDA_CXX = 5
    PTX = 6
    CUBIN = 7
    FATBIN = 8


class PlacePolicy(enum.IntEnum):
    """Placement of unplaced kernel nodes (weft_place_policy)."""

    DEFAULT = 0
    SINGLE = 1
    ROUND_ROBIN = 2
    LOCALITY = 3
    HEFT = 4


class PlaceScope(enum.IntEnum):
    """The devices placement chooses among (weft_place_scope)."""

    DEFAULT = 0
    DRIVER = 1
    ALL = 2


class NativeGraphs(enum.IntEnum):
    """Whether relaunches may run as native graphs (weft_native_graphs)."""

    DEFAULT = 0
    OFF = 1
    ON = 2


class Priority(enum.IntEnum):
    """The priority of an executable graph or a node (weft_priority)."""

    DEFAULT = 0
    HIGH = 1


class LogLevel(enum.IntEnum):
    """weft's log levels (weft_log_level)."""

    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4
    OFF = 5


class ParamType(enum.IntEnum):
    """The type of a kernel parameter (weft_param_type); UNKNOWN where no
    build of the kernel tells it (Kernel.params)."""

    UNKNOWN = 0
    BUFFER = 1
    I32 = 2
    U32 = 3
    I64 = 4
    U64 = 5
    F32 = 6
    F64 = 7
    BYTES = 8
    LOCAL = 9


_SOURCE_KINDS = {
    "portable": SourceKind.PORTABLE, "opencl": SourceKind.OPENCL_C,
    "opencl_c": SourceKind.OPENCL_C, "spirv": SourceKind.SPIRV,
    "cl_binary": SourceKind.CL_BINARY, "cuda": SourceKind.CUDA_CXX,
    "cuda_cxx": SourceKind.CUDA_CXX, "ptx": SourceKind.PTX,
    "cubin": SourceKind.CUBIN, "fatbin": SourceKind.FATBIN,
}


def _enum(cls, value, what):
    if value is None:
        return cls(0)
    if isinstance(value, str):
        try:
            return cls[value.upper().replace("-", "_")]
        except KeyError:
            raise ValueError("%s: unknown value %r (one of %s)" % (
                what, value, ", ".join(m.name.lower() for m in cls))) from None
    return cls(value)


def _s(b):
    return b.decode(errors="replace") if b is not None else None


# --------------------------------------------------------------------------
# Module-level functions


def version():
    """The version of the loaded libweft, as "MAJOR.MINOR.PATCH"."""
    return _L.weft_version().decode()


def strerror(code):
    """A short message for a weft error code ("out of device memory")."""
    return _L.weft_strerror(code).decode()


def err_name(code):
    """The name of a weft error code ("WEFT_EDEVMEM")."""
    return _L.weft_err_name(code).decode()


def last_error():
    """What the last failing weft call on this thread said ("" if none)."""
    return _L.weft_last_error().decode(errors="replace")


def set_log_level(level):
    """Drop weft's log messages below level (a LogLevel or its name)."""
    _L.weft_log_set_level(_enum(LogLevel, level, "set_log_level"))


def get_log_level():
    """The current log level, a LogLevel."""
    return LogLevel(_L.weft_log_get_level())


_log_sink = None


def set_log_sink(fn):
    """Send weft's log lines to fn(level, subsystem, line); None: stderr.

    fn may be called from any thread, also weft's own workers (holding the
    GIL while it runs), and must not call weft.
    """
    global _log_sink
    if fn is None:
        _L.weft_log_set_sink(ctypes.cast(None, _lib.LOG_FN), None)
        _log_sink = None
        return

    def sink(level, subsystem, line, user):
        try:
            fn(LogLevel(level), _s(subsystem), _s(line))
        except BaseException:  # a sink has nowhere to report to
            pass

    cb = _lib.LOG_FN(sink)
    _L.weft_log_set_sink(cb, None)
    _log_sink = cb


def param_type_size(t):
    """The size in bytes of a scalar ParamType; 0 for the others."""
    return _L.weft_param_type_size(int(t))


def param_type_name(t):
    """The name of a ParamType ("f32"); "unknown" for no type."""
    return _L.weft_param_type_name(int(t)).decode()


def place_policy_name(policy):
    """The name of a PlacePolicy ("heft"), or None."""
    return _s(_L.weft_place_policy_name(int(policy)))


# --------------------------------------------------------------------------
# Lifetimes: every C object is held by a _Handle, counted.
#
# A handle's count is one for its Python owner plus one for each handle
# that uses it (a buffer's runtime, a graph's buffers and kernels' modules,
# an executable graph's). The C object is destroyed when the count falls to
# zero, then the handles it used are released in turn: weft never sees a
# destroy it would refuse (EBUSY) in whatever order the Python objects are
# closed or collected, also cycles that the garbage collector finalizes in
# any order. A release on a thread that is running a weft callback (a host
# task, where destroying an executable graph would wait for itself) is
# deferred to the next call into this module on another thread.

_lock = threading.Lock()
_tls = threading.local()
_deferred = []
_live = weakref.WeakSet()


class _Handle:
    __slots__ = ("ptr", "destroy", "parents", "count", "keep", "what",
                 "__weakref__")

    def __init__(self, what, ptr, destroy, parents=(), keep=None):
        self.what = what
        self.ptr = ptr
        self.destroy = destroy
        self.parents = list(parents)
        self.count = 1
        self.keep = keep
        with _lock:
            for p in self.parents:
                p.count += 1
        _live.add(self)

    def get(self):
        p = self.ptr
        if p is None:
            raise destroyed(self.what)
        return p


def _release(h):
    """Drop one count of h; destroy h (and maybe its parents) at zero."""
    if getattr(_tls, "in_callback", 0):
        with _lock:
            _deferred.append(h)
        return
    todo = [h]
    while todo:
        h = todo.pop()
        with _lock:
            h.count -= 1
            if h.count > 0 or h.ptr is None:
                continue
            ptr, h.ptr = h.ptr, None
        rc = h.destroy(ptr)
        if rc < 0:
            # Not expected (counts order every destroy): keep the object
            # alive rather than lose it, and say so.
            import warnings
            with _lock:
                h.ptr = ptr
                h.count += 1
                _deferred.append(h)
            warnings.warn("weft: destroying %s: %s" % (h.what, from_last(rc)),
                          RuntimeWarning, stacklevel=2)
            continue
        h.keep = None
        todo.extend(h.parents)
        h.parents = []


def _drain():
    """Run the releases deferred from callback threads and finalizers."""
    if not _deferred or getattr(_tls, "in_callback", 0):
        return
    with _lock:
        items = _deferred[:]
        # finalizers append without the lock: keep what came after the copy
        del _deferred[:len(items)]
    for h in items:
        _release(h)


def _release_collected(h):
    """Release h from a finalizer (__del__).

    The garbage collector runs finalizers inside whatever allocation
    triggers it, also one that this thread makes while it holds _lock,
    which is not reentrant: a finalizer never waits for the lock. It
    defers the release (list.append is atomic under the GIL) and runs the
    deferred ones at once when the lock is free, else at the next call
    into this module.
    """
    _deferred.append(h)
    if _lock.acquire(blocking=False):
        _lock.release()
        _drain()


@atexit.register
def _close_all():
    # Interpreter exit: release what is still owned (the counts order the
    # destroys), so that wrapped arrays get their final bytes and trace
    # files are written.
    _drain()
    for owner in list(_Owner._owners)[::-1]:
        try:
            owner.close()
        except Exception:
            pass


class _Owner:
    """Base of the objects that own a handle: close(), with, finalizer."""

    _owners = weakref.WeakSet()
    _h = None

    def _own(self, handle):
        self._h = handle
        self._p = handle.ptr      # None once closed: the fast paths' check
        self._closed = False
        _Owner._owners.add(self)

    def close(self):
        """Release this object: weft destroys it once nothing uses it."""
        if self._h is not None and not self._closed:
            self._closed = True
            self._p = None
            _release(self._h)
        _drain()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._h is not None and not self._closed:
                self._closed = True
                self._p = None
                _release_collected(self._h)
        except Exception:
            pass

    @property
    def closed(self):
        """True once close() was called (or the with block ended)."""
        return self._closed

    def _ptr(self):
        if self._closed:
            raise destroyed(self._h.what if self._h else type(self).__name__)
        return self._h.ptr


# --------------------------------------------------------------------------
# Runtime and devices

class Driver:
    """One driver weft was asked for: name, ndevices, status, reason.

    status is 0, or the weft error code that kept the driver from loading
    (e.g. WEFT_ENOTSUP without libcuda); reason says why a driver has no
    devices, or "".
    """

    __slots__ = ("name", "ndevices", "status", "reason")

    def __init__(self, name, ndevices, status, reason):
        self.name, self.ndevices, self.status, self.reason = \
            name, ndevices, status, reason

    def __repr__(self):
        return "Driver(%r, ndevices=%d, status=%d, reason=%r)" % (
            self.name, self.ndevices, self.status, self.reason)


_INFO_FIELDS = [f for f, _ in _lib.DeviceInfo._fields_ if f != "size"]


class Device:
    """A device of a runtime, with weft-info's facts as attributes.

    Attributes (weft_device_info): driver, index, driver_index, type (a
    DeviceType), name, vendor, platform, driver_version, global_mem,
    max_alloc, local_mem (bytes), compute_units, max_group_size,
    arg_offset_align, copy_engines, concurrent_kernels, timing_events,
    pinned_host, host_register, unified_memory, managed_memory, svm,
    queue_priority_low, queue_priority_high, cc_major, cc_minor, pci_bus_id,
    numa_node, cpuset, ncores. A device lives as long as its runtime.
    """

    def __init__(self, runtime, ptr):
        self._rt = runtime
        self._ptr_ = ptr
        info = _lib.DeviceInfo()
        info.size = ctypes.sizeof(info)
        check(_L.weft_device_get_info(ptr, _byref(info)))
        for f in _INFO_FIELDS:
            v = getattr(info, f)
            setattr(self, f, v.decode(errors="replace") if isinstance(v, bytes) else v)
        self.type = DeviceType(self.type)

    def _ptr(self):
        self._rt._ptr()
        return self._ptr_

    def info(self):
        """Every fact of the device as a dict."""
        return {f: getattr(self, f) for f in _INFO_FIELDS}

    def native(self):
        """weft's native context and device of this device, as integers.

        (weft_device_native) CUDA: the CUcontext weft uses and the CUdevice;
        OpenCL: weft's cl_context and the cl_device_id; host: (0, 0); sim:
        its own objects. For memory of the program's own
        (Runtime.wrap_device) and interop with other libraries.
        """
        ctx, dev = _c_void_p(), _c_void_p()
        check(_L.weft_device_native(self._rt._ptr(), self._ptr(), _byref(ctx), _byref(dev)))
        return ctx.value or 0, dev.value or 0

    def can_access_peer(self, other):
        """True if this device copies to and from other directly."""
        can = ctypes.c_int()
        check(_L.weft_device_can_access_peer(self._ptr(), other._ptr(), _byref(can)))
        return bool(can.value)

    def __repr__(self):
        return "<weft.Device %d: %s %s (%s)>" % (
            self.index, self.driver, self.name, self.type.name.lower())


class Runtime(_Owner):
    """The devices of every selected driver, and what is made from them.

    Options (weft_runtime_options; the WEFT_* environment variables
    override them): devices ("cuda,opencl,host" by default; "host",
    "sim", "opencl:0", "all"...), sim (the sim driver's "key=value,..."
    configuration), host_devices and host_threads (0: defaults),
    device_mem_limit (bytes per device, 0: all), place_policy ("single",
    "round-robin", "locality", "heft" or a PlacePolicy), trace_file (a
    Chrome trace written when the runtime is destroyed).
    """

    def __init__(self, devices=None, sim=None, host_devices=0, host_threads=0,
                 device_mem_limit=0, place_policy=None, trace_file=None):
        _drain()
        o = _lib.RuntimeOptions()
        o.size = ctypes.sizeof(o)
        keep = []

        def enc(s):
            if s is None:
                return None
            b = os.fsencode(s) if not isinstance(s, bytes) else s
            keep.append(b)
            return b

        o.devices = enc(devices)
        o.sim_config = enc(sim)
        o.host_devices = host_devices
        o.host_threads = host_threads
        o.device_mem_limit = device_mem_limit
        o.place_policy = _enum(PlacePolicy, place_policy, "place_policy")
        o.trace_file = enc(trace_file)
        p = _c_void_p()
        check(_L.weft_runtime_create(_byref(p), _byref(o)))
        self._own(_Handle("runtime", p.value, _L.weft_runtime_destroy, keep=keep))
        self.devices = [Device(self, _L.weft_runtime_device(p.value, i))
                        for i in range(_L.weft_runtime_device_count(p.value))]
        """The devices, in runtime order (cuda, opencl, host, sim)."""
        self._by_ptr = {d._ptr_: d for d in self.devices}
        self.drivers = []
        """The drivers asked for (Driver), whether or not they found devices."""
        for i in range(_L.weft_runtime_driver_count(p.value)):
            name, nd, st, why = (ctypes.c_char_p(), ctypes.c_uint(),
                                 ctypes.c_int(), ctypes.c_char_p())
            check(_L.weft_runtime_driver(p.value, i, _byref(name), _byref(nd),
                                         _byref(st), _byref(why)))
            self.drivers.append(Driver(_s(name.value), nd.value, st.value,
                                       _s(why.value) or ""))

    def _device(self, ptr):
        return self._by_ptr.get(ptr) if ptr else None

    def stats(self):
        """The memory layer's counters since creation, as a dict."""
        s = _lib.Stats()
        s.size = ctypes.sizeof(s)
        check(_L.weft_runtime_get_stats(self._ptr(), _byref(s)))
        return {f: getattr(s, f) for f in _lib.STATS_FIELDS}

    # Buffers
    def wrap(self, array):
        """A Buffer over a NumPy array's memory, without copying.

        The array must be C-contiguous and writeable; it is kept alive while
        weft uses it and is the buffer's host copy: it holds the buffer's
        current bytes after Buffer.sync(), a read or a map, and when the
        buffer is destroyed. Change it behind weft's back only with
        Buffer.invalidate().
        """
        if not isinstance(array, np.ndarray):
            raise TypeError("Runtime.wrap: a NumPy array is needed, not %s"
                            % type(array).__name__)
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError("Runtime.wrap: the array must be C-contiguous and writeable")
        if array.nbytes == 0:
            raise ValueError("Runtime.wrap: the array is empty")
        _drain()
        p = _c_void_p()
        check(_L.weft_buffer_wrap(self._ptr(), array.ctypes.data, array.nbytes, _byref(p)))
        h = _Handle("buffer", p.value, _L.weft_buffer_destroy, (self._h,), keep=array)
        return Buffer(self, h, array.dtype, array.shape, array)

    def wrap_device(self, device, handle, size, offset=0, dtype=np.uint8, shape=None):
        """A Buffer whose replica on device is the program's own memory.

        (weft_buffer_wrap_device) handle: a CUdeviceptr (CUDA), a cl_mem of
        weft's context (OpenCL, as an integer), a host pointer (host); the
        bytes [offset, + size) of it are the buffer's first content. weft
        never frees that memory: keep it allocated until the buffer is
        destroyed (which first makes it hold the final bytes).
        """
        dtype = np.dtype(dtype)
        _drain()
        p = _c_void_p()
        check(_L.weft_buffer_wrap_device(self._ptr(), device._ptr(), handle, offset,
                                         size, _byref(p)))
        h = _Handle("buffer", p.value, _L.weft_buffer_destroy, (self._h,))
        return Buffer(self, h, dtype, shape or (size // dtype.itemsize,), None)

    def buffer(self, nbytes):
        """A Buffer of nbytes bytes that weft allocates (contents undefined)."""
        return self.empty((nbytes,), np.uint8)

    def empty(self, shape, dtype=np.float32):
        """A Buffer of weft's memory for an array of shape and dtype."""
        dtype = np.dtype(dtype)
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        _drain()
        p = _c_void_p()
        check(_L.weft_buffer_create(self._ptr(), nbytes, _byref(p)))
        h = _Handle("buffer", p.value, _L.weft_buffer_destroy, (self._h,))
        return Buffer(self, h, dtype, shape, None)

    def zeros(self, shape, dtype=np.float32):
        """A Buffer like empty(), filled with zeros."""
        b = self.empty(shape, dtype)
        b.fill(np.uint8(0))
        return b

    def host_empty(self, shape, dtype=np.float32):
        """A NumPy array in page-locked host memory (weft_host_alloc).

        Devices copy from and into it at full speed; wrap it (Runtime.wrap)
        or use it in write and read nodes. It is freed when the array (and
        every view of it) is collected.
        """
        dtype = np.dtype(dtype)
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        p = _c_void_p()
        check(_L.weft_host_alloc(self._ptr(), nbytes, _byref(p)))
        holder = _PinnedBlock(self._h, p.value, nbytes)
        return np.ndarray(shape, dtype, buffer=holder.view)

    # Modules and graphs
    def module(self, source=None, kind="portable", options=None, name=None,
               variants=None):
        """Build a Module from source now, on every device it fits.

        source is text (str) or bytes; kind is "portable" (one source for
        every driver), "opencl" (OpenCL C), "cuda" (CUDA C++, NVRTC), "ptx",
        "cubin", "fatbin", "spirv" or "cl_binary" (or a SourceKind); options
        go to the compiler. variants: a list of (source, kind[, options[,
        name]]) tuples for one module of several variants (weft takes, per
        device, the first it accepts). Compile errors raise BuildFailed with
        the compiler's log.
        """
        if variants is None:
            if source is None:
                raise TypeError("Runtime.module: no source")
            variants = [(source, kind, options, name)]
        srcs = (_lib.ModuleSource * len(variants))()
        keep = []
        for i, v in enumerate(variants):
            v = tuple(v) + (None,) * (4 - len(v))
            text, k, opts, nm = v
            k = _SOURCE_KINDS[k.lower()] if isinstance(k, str) else SourceKind(k)
            data = text.encode() if isinstance(text, str) else bytes(text)
            if isinstance(text, str):
                data += b"\0"
            buf = ctypes.create_string_buffer(data, len(data))
            keep.append(buf)
            srcs[i].kind = k
            srcs[i].data = ctypes.addressof(buf)
            srcs[i].size = 0 if isinstance(text, str) else len(data)
            if opts is not None:
                keep.append(opts.encode())
                srcs[i].options = keep[-1]
            if nm is not None:
                keep.append(nm.encode())
                srcs[i].name = keep[-1]
        _drain()
        p = _c_void_p()
        check(_L.weft_module_create(self._ptr(), srcs, len(variants), _byref(p)))
        return Module(self, _Handle("module", p.value, _L.weft_module_destroy, (self._h,)))

    def graph(self):
        """A new, empty Graph."""
        _drain()
        p = _c_void_p()
        check(_L.weft_graph_create(self._ptr(), _byref(p)))
        return Graph(self, _Handle("graph", p.value, _L.weft_graph_destroy, (self._h,)))

    def __repr__(self):
        return "<weft.Runtime: %d devices%s>" % (
            len(self.devices), " (closed)" if self.closed else "")


class _PinnedBlock:
    """Page-locked memory of a runtime, freed when its last view goes."""

    def __init__(self, rt_handle, ptr, nbytes):
        self.rt = rt_handle
        self.ptr = ptr
        with _lock:
            rt_handle.count += 1
        self.view = (ctypes.c_char * nbytes).from_address(ptr)
        self.view._weft_block = self  # the array's base keeps us alive

    def __del__(self):
        try:
            _L.weft_host_free(self.rt.ptr, self.ptr)
            _release_collected(self.rt)
        except Exception:
            pass


# --------------------------------------------------------------------------
# Modules and kernels

class Module(_Owner):
    """Compiled kernels of one source (or several variants of it)."""

    def __init__(self, runtime, handle):
        self.runtime = runtime
        self._own(handle)
        self._kernels = {}

    def close(self):
        """Release this object: weft destroys it once nothing uses it."""
        for k in self._kernels.values():
            k._add = _miss_add     # Graph.kernel takes the direct path
        _Owner.close(self)

    @property
    def name(self):
        """The module's name ("portable", or that of its first variant)."""
        return _s(_L.weft_module_name(self._ptr()))

    def kernel(self, name):
        """The Kernel called name (NotFound if no device's build has it)."""
        k = self._kernels.get(name)
        if k is None:
            p = _c_void_p()
            check(_L.weft_module_get_kernel(self._ptr(), name.encode(), _byref(p)))
            k = self._kernels[name] = Kernel(self, p.value, name)
        return k

    __getitem__ = kernel

    def build_log(self, device):
        """What the compiler said when the module was built on device."""
        n = ctypes.c_size_t()
        check(_L.weft_module_build_log(self._ptr(), device._ptr(), None, 0, _byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        check(_L.weft_module_build_log(self._ptr(), device._ptr(), buf,
                                       n.value + 1, _byref(n)))
        return buf.value.decode(errors="replace")


class Param(collections.namedtuple("Param", "type size")):
    """What a kernel's builds tell of one parameter (weft_param_info).

    type: a ParamType, UNKNOWN where no build tells it (CUDA tells sizes
    only; OpenCL does not map a struct); size: the bytes the argument takes
    (a scalar's, a BYTES parameter's where known, an unknown type's where a
    build tells it, else 0).
    """

    __slots__ = ()

    def __str__(self):
        if self.type == ParamType.UNKNOWN:
            return "unknown (%d bytes)" % self.size if self.size else "unknown"
        if self.type == ParamType.BYTES and self.size:
            return "bytes (%d)" % self.size
        return self.type.name.lower()


# The NumPy scalar type each scalar parameter type takes.
_SCALAR_OF = {
    ParamType.I32: np.int32, ParamType.U32: np.uint32,
    ParamType.I64: np.int64, ParamType.U64: np.uint64,
    ParamType.F32: np.float32, ParamType.F64: np.float64,
}


class Kernel:
    """A kernel of a module, by name; it lives as long as its module.

    Graph.kernel checks its arguments against :attr:`params` (where the
    kernel's builds tell them) before weft sees them, raising BadArguments
    that names the argument, what was given and what the parameter takes.
    """

    def __init__(self, module, ptr, name):
        self.module = module
        self._kptr = ptr
        self._kcp = _c_void_p(ptr)
        self.name = name
        """The kernel's name."""
        self._params = False   # not asked yet
        self._packers = {}     # signatures that passed -> packer or None
        # Graph.kernel's batching (see _batcher): the signatures weft
        # accepted -> batcher or None; the last one's; per number of
        # arguments, the grids weft accepted -> a weft_kernel_node's bytes
        # past args.
        self._batchers = {}
        self._add = _miss_add
        self._hdrs = {}

    def _ptr(self):
        self.module._ptr()
        return self._kptr

    def supports(self, device):
        """True if the kernel has an implementation on device."""
        return bool(_L.weft_kernel_supports(self._ptr(), device._ptr()))

    @property
    def params(self):
        """The parameters as a tuple of Param, or None where no build of the
        kernel tells their number (weft_kernel_param_count, _info)."""
        if self._params is False:
            n = ctypes.c_uint()
            rc = _L.weft_kernel_param_count(self._ptr(), _byref(n))
            if rc == NotSupported.code:
                self._params = None
            else:
                check(rc)
                info = _lib.ParamInfo()
                out = []
                for i in range(n.value):
                    check(_L.weft_kernel_param_info(self._kptr, i, _byref(info)))
                    out.append(Param(ParamType(info.type), info.size))
                self._params = tuple(out)
        return self._params

    def _check(self, args, where):
        """Raise BadArguments where args do not fit the known parameters."""
        params = self.params
        if params is None:
            return
        if len(args) != len(params):
            raise BadArguments(
                -9, "%s(%s): %d arguments given, the kernel takes %d (%s)"
                % (where, self.name, len(args), len(params),
                   ", ".join(str(p) for p in params)))
        for i, (v, p) in enumerate(zip(args, params)):
            why = _arg_mismatch(v, p)
            if why:
                raise BadArguments(
                    -9, "%s(%s): argument %d is %s, parameter %d takes %s%s"
                    % (where, self.name, i, _describe(v), i, p, why))

    def __repr__(self):
        return "<weft.Kernel %s>" % self.name


# Argument types whose size is their value's: a signature of types says
# nothing of them.
_SIZED = (bytes, bytearray, np.void)


def _describe(v):
    t = type(v)
    if isinstance(v, (bytes, bytearray)):
        return "%d bytes" % len(v)
    if isinstance(v, np.void):
        return "a %d-byte NumPy record" % v.nbytes
    if isinstance(v, Local):
        return "weft.local(%d)" % v.nbytes
    if isinstance(v, (Buffer, Region, Access)):
        return "a %s" % t.__name__
    if t.__module__ == "numpy":
        return "np.%s" % t.__name__
    return "a Python %s" % t.__name__


def _arg_mismatch(v, p):
    """Why v does not fit parameter p ("" if it does or cannot be told)."""
    t = p.type
    is_buf = isinstance(v, (Buffer, Region, Access))
    if t == ParamType.BUFFER:
        return "" if is_buf else " (a Buffer, a Region or read/write/rw(...))"
    if t == ParamType.LOCAL:
        return "" if isinstance(v, Local) else " (weft.local(nbytes))"
    want = _SCALAR_OF.get(t)
    if want is not None:
        if type(v) is want:
            return ""
        return " (pass a NumPy scalar: np.%s(...))" % want.__name__
    raw = v.nbytes if isinstance(v, np.void) else (
        len(v) if isinstance(v, (bytes, bytearray)) else None)
    if t == ParamType.BYTES:
        if raw is None:
            return " (bytes of the struct, or a NumPy record)"
        if p.size and raw != p.size:
            return " (%d bytes)" % p.size
        return ""
    # unknown type: a size, where a build tells one
    if isinstance(v, (bool, int, float)):
        return " (a NumPy scalar: a Python %s has no C type)" % type(v).__name__
    if not p.size or is_buf or isinstance(v, Local):
        return ""
    size = raw if raw is not None else getattr(v, "nbytes", None)
    if size is not None and size != p.size:
        return " (an argument of %d bytes)" % p.size
    return ""


# --------------------------------------------------------------------------
# Buffers, regions of them, and accesses

class Region:
    """Bytes of a buffer: the range [offset, + size), or a 2-D/3-D block.

    A block (rows > 0) is rows x slices runs of size (row_bytes) bytes,
    row_pitch bytes apart, slices slice_pitch bytes apart, from offset
    (its origin). Regions are made by Buffer.range(), Buffer[i:j],
    Buffer.block() and Buffer.tile(); as kernel arguments and accesses they
    mean READ_WRITE unless wrapped by read(), write() or rw().
    """

    __slots__ = ("buffer", "offset", "size", "rows", "slices", "row_pitch",
                 "slice_pitch")

    def __init__(self, buffer, offset, size, rows=0, slices=0, row_pitch=0,
                 slice_pitch=0):
        self.buffer = buffer
        self.offset = offset
        self.size = size
        self.rows = rows
        self.slices = slices
        self.row_pitch = row_pitch
        self.slice_pitch = slice_pitch

    @property
    def is_block(self):
        """True for a block, False for a range."""
        return self.rows > 0

    def nbytes(self):
        """Bytes of the region (WHOLE resolved)."""
        if self.rows:
            return self.size * self.rows * max(self.slices, 1)
        return self.buffer.size - self.offset if self.size == WHOLE else self.size

    def _block(self):
        return _lib.Block(self.offset, self.size, self.rows, max(self.slices, 1),
                          self.row_pitch, self.slice_pitch)

    def __repr__(self):
        if self.rows:
            return "<weft.Region block origin=%d row_bytes=%d rows=%d slices=%d>" % (
                self.offset, self.size, self.rows, self.slices)
        return "<weft.Region [%d, +%d)>" % (self.offset, self.nbytes())


_new = object.__new__


class Access:
    """A region (or a whole buffer) with the way a node uses it."""

    __slots__ = ("region", "mode")

    def __init__(self, target, mode):
        self.region = _region(target)
        self.mode = mode if type(mode) is AccessMode else AccessMode(mode)

    def __repr__(self):
        return "<weft.Access %s %r>" % (self.mode.name, self.region)


def _region(x):
    if isinstance(x, Region):
        return x
    if isinstance(x, Buffer):
        return x._whole
    if isinstance(x, Access):
        return x.region
    raise TypeError("a weft Buffer or Region is needed, not %s" % type(x).__name__)


def read(x):
    """x (a Buffer or Region) as read by the node."""
    return Access(x, AccessMode.READ)


def write(x):
    """x (a Buffer or Region) as written, every byte, by the node."""
    return Access(x, AccessMode.WRITE)


def rw(x):
    """x (a Buffer or Region) as read and written by the node."""
    return Access(x, AccessMode.READ_WRITE)


class Local:
    """A group-local scratch argument of nbytes bytes (weft_arg_local)."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes):
        self.nbytes = int(nbytes)


def local(nbytes):
    """A group-local scratch kernel argument of nbytes bytes."""
    return Local(nbytes)


class Buffer(_Owner):
    """Bytes that weft keeps coherent over the host and the devices.

    ``dtype`` and ``shape`` say how the bytes read back as an array (uint8
    and the size for Runtime.buffer()); ``array`` is the wrapped NumPy array
    (None for weft's own memory). buf[i:j] is the range of elements i to j
    (of the flat array), as a Region.
    """

    def __init__(self, runtime, handle, dtype, shape, array, parent=None,
                 offset=0):
        self.runtime = runtime
        self._own(handle)
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.array = array
        self.parent = parent
        """The buffer this is a view of, or None."""
        self.view_offset = offset
        self.size = _L.weft_buffer_size(handle.ptr)
        """The size in bytes."""
        self._whole = Region(self, 0, self.size)
        self._itemsize = self.dtype.itemsize
        self._nitems = self.size // self._itemsize

    # Regions
    def range(self, offset=0, size=WHOLE):
        """The bytes [offset, + size) (WHOLE: to the end), as a Region."""
        return Region(self, offset, size)

    def __getitem__(self, key):
        if type(key) is slice:
            i = key.start
            j = key.stop
            if (type(i) is int and type(j) is int and 0 <= i <= j <= self._nitems
                    and key.step is None):
                # Region(self, ...) without the call of a class
                it = self._itemsize
                r = _new(Region)
                r.buffer = self
                r.offset = i * it
                r.size = (j - i) * it
                r.rows = r.slices = r.row_pitch = r.slice_pitch = 0
                return r
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("Buffer[i:j]: a slice of elements with step 1")
        n = self.size // self.dtype.itemsize
        i, j, _ = key.indices(n)
        j = max(i, j)
        return Region(self, i * self.dtype.itemsize, (j - i) * self.dtype.itemsize)

    def block(self, origin, row_bytes, rows, row_pitch, slices=1, slice_pitch=0):
        """A 2-D or 3-D block of the buffer's bytes (weft_block), as a Region."""
        return Region(self, origin, row_bytes, rows, slices, row_pitch, slice_pitch)

    def tile(self, row, col, nrows, ncols):
        """Rows [row, + nrows) and columns [col, + ncols) of a 2-D buffer."""
        if len(self.shape) != 2:
            raise ValueError("Buffer.tile: the buffer's shape %r is not 2-D" % (self.shape,))
        it = self.dtype.itemsize
        ld = self.shape[1]
        return Region(self, (row * ld + col) * it, ncols * it, nrows, 1, ld * it, 0)

    def view(self, offset, size=WHOLE, dtype=None, shape=None):
        """A Buffer over the bytes [offset, + size) of this one."""
        _drain()
        p = _c_void_p()
        check(_L.weft_buffer_view(self._ptr(), offset, size, _byref(p)))
        h = _Handle("buffer view", p.value, _L.weft_buffer_destroy, (self._h,))
        n = _L.weft_buffer_size(p.value)
        dt = np.dtype(dtype) if dtype is not None else self.dtype
        if n % dt.itemsize:
            dt = np.dtype(np.uint8)
        return Buffer(self.runtime, h, dt, shape or (n // dt.itemsize,), None, self, offset)

    # Synchronous helpers
    def write(self, src, offset=0):
        """Write a NumPy array's bytes (or bytes) at offset, now."""
        src = np.ascontiguousarray(src) if not isinstance(src, (bytes, bytearray)) \
            else np.frombuffer(src, np.uint8)
        check(_L.weft_buffer_write(self._ptr(), offset, src.ctypes.data, src.nbytes))

    def read(self, out=None, offset=0):
        """The buffer's bytes (from offset) in a NumPy array, now.

        out: a C-contiguous array to read into (its size many bytes);
        without it a new array of the buffer's dtype and shape (or as many
        elements as remain past offset).
        """
        if out is None:
            if offset == 0:
                out = np.empty(self.shape, self.dtype)
            else:
                out = np.empty((self.size - offset) // self.dtype.itemsize, self.dtype)
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("Buffer.read: out must be C-contiguous and writeable")
        check(_L.weft_buffer_read(self._ptr(), offset, out.ctypes.data, out.nbytes))
        return out

    numpy = read

    def fill(self, value, offset=0, size=WHOLE):
        """Fill [offset, + size) with a 1, 2 or 4-byte NumPy scalar pattern."""
        pat = _pattern(value, "Buffer.fill")
        check(_L.weft_buffer_fill(self._ptr(), offset, size, pat, len(pat)))

    def sync(self):
        """Make the wrapped array hold the buffer's current bytes."""
        check(_L.weft_buffer_sync_host(self._ptr()))

    def invalidate(self, offset=0, size=WHOLE):
        """The wrapped array's bytes [offset, + size) were changed outside weft."""
        check(_L.weft_buffer_invalidate(self._ptr(), offset, size))

    def device_address(self, device, offset=0, size=WHOLE):
        """Make [offset, + size) valid on device; where it is there, as a dict.

        (weft_buffer_device_address) Keys: address (CUDA: the CUdeviceptr;
        host: the host address), mem (OpenCL: the cl_mem, as an integer),
        offset (in mem), ptr (host: the host address). Valid until the next
        launch of a graph that uses the buffer or its destruction; for code
        that weft does not run (a CuPy or PyCUDA kernel, say). After
        writing there, call mark_device_written().
        """
        a = _lib.DeviceAddress()
        check(_L.weft_buffer_device_address(self._ptr(), device._ptr(), offset, size,
                                            _byref(a)))
        return {"address": a.address, "mem": a.mem or 0, "offset": a.offset,
                "ptr": a.ptr or 0}

    def mark_device_written(self, device, offset=0, size=WHOLE):
        """The program wrote [offset, + size) on device through device_address()."""
        check(_L.weft_buffer_mark_device_written(self._ptr(), device._ptr(), offset, size))

    def map(self, mode=AccessMode.READ_WRITE, offset=0, size=WHOLE):
        """Host access, as a context manager giving a NumPy array::

            with buf.map(weft.AccessMode.READ) as a:
                print(a.sum())
        """
        return _Mapping(self, AccessMode(mode), offset, size)

    def __repr__(self):
        return "<weft.Buffer %d bytes, %s %r%s>" % (
            self.size, self.dtype, self.shape, " (closed)" if self.closed else "")


class _Mapping:
    def __init__(self, buf, mode, offset, size):
        self.buf, self.mode, self.offset, self.size = buf, mode, offset, size
        self.ptr = None

    def __enter__(self):
        p = _c_void_p()
        check(_L.weft_buffer_map(self.buf._ptr(), self.offset, self.size,
                                 self.mode, _byref(p)))
        self.ptr = p.value
        n = self.buf.size - self.offset if self.size == WHOLE else self.size
        return _array_at(p.value, n, self.buf.dtype)

    def __exit__(self, *exc):
        check(_L.weft_buffer_unmap(self.buf._ptr(), self.ptr))


def _array_at(ptr, nbytes, dtype):
    """A NumPy array over nbytes of memory at ptr (not owning it)."""
    dtype = np.dtype(dtype)
    if nbytes % dtype.itemsize:
        dtype = np.dtype(np.uint8)
    if nbytes == 0:
        return np.empty(0, dtype)
    return np.frombuffer((ctypes.c_char * nbytes).from_address(ptr), dtype)


def _region_array(ptr, region):
    """The array a host task or map sees for region at ptr."""
    dt = region.buffer.dtype
    if not region.rows:
        return _array_at(ptr, region.nbytes(), dt)
    it = dt.itemsize if region.size % dt.itemsize == 0 else 1
    dt = dt if it == dt.itemsize else np.dtype(np.uint8)
    slices = max(region.slices, 1)
    span = (slices - 1) * region.slice_pitch + (region.rows - 1) * region.row_pitch + region.size
    raw = (ctypes.c_char * span).from_address(ptr)
    if slices == 1:
        return np.ndarray((region.rows, region.size // it), dt, raw, 0,
                          (region.row_pitch, it))
    return np.ndarray((slices, region.rows, region.size // it), dt, raw, 0,
                      (region.slice_pitch, region.row_pitch, it))


def _pattern(value, what):
    if isinstance(value, (bytes, bytearray)):
        pat = bytes(value)
    elif isinstance(value, np.generic):
        pat = value.tobytes()
    else:
        raise TypeError("%s: the pattern is a NumPy scalar of 1, 2 or 4 bytes "
                        "(np.uint8, np.float32...), not %s" % (what, type(value).__name__))
    return pat


# --------------------------------------------------------------------------
# Graphs

_SCALARS = {
    np.dtype(np.int32): (2, "i32"), np.dtype(np.uint32): (3, "u32"),
    np.dtype(np.int64): (4, "i64"), np.dtype(np.uint64): (5, "u64"),
    np.dtype(np.float32): (6, "f32"), np.dtype(np.float64): (7, "f64"),
}
_SCALAR_TYPES = {type(np.dtype(k).type(0)): v for k, v in _SCALARS.items()}


def _dims(grid, group):
    d = _lib.Dims()
    g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    if not 1 <= len(g) <= 3:
        raise ValueError("grid: 1 to 3 dimensions, not %d" % len(g))
    d.items[0] = g[0]
    d.items[1] = g[1] if len(g) > 1 else 1
    d.items[2] = g[2] if len(g) > 2 else 1
    if group is not None:
        gr = (group,) if isinstance(group, (int, np.integer)) else tuple(group)
        for i, v in enumerate(gr):
            d.group[i] = v
    return d


class _ArgError(TypeError):
    pass


# Scalars: weft reads neither the buffer nor the range of a value argument.
def _set_i32(a, v, keep):
    a.type = 2
    a.size = 4
    a.i32 = v.item()


def _set_u32(a, v, keep):
    a.type = 3
    a.size = 4
    a.u32 = v.item()


def _set_i64(a, v, keep):
    a.type = 4
    a.size = 8
    a.i64 = v.item()


def _set_u64(a, v, keep):
    a.type = 5
    a.size = 8
    a.u64 = v.item()


def _set_f32(a, v, keep):
    a.type = 6
    a.size = 4
    a.f32 = v.item()


def _set_f64(a, v, keep):
    a.type = 7
    a.size = 8
    a.f64 = v.item()


def _set_region(a, r, keep, mode=3):
    b = r.buffer
    p = b._p
    if p is None:
        raise destroyed("buffer")
    a.type = 1
    a.access = mode
    a.buffer = p
    a.offset = r.offset
    a.size = r.size
    a.rows = r.rows
    if r.rows:
        a.slices = r.slices if r.slices > 0 else 1
        a.row_pitch = r.row_pitch
        a.slice_pitch = r.slice_pitch
    return b._h


def _set_buffer(a, b, keep):
    return _set_region(a, b._whole, keep)


def _set_access(a, acc, keep):
    return _set_region(a, acc.region, keep, acc.mode)


def _set_local(a, v, keep):
    a.type = 9
    a.buffer = None
    a.size = v.nbytes


def _set_other(a, v, keep):
    if isinstance(v, (bytes, bytearray, np.void)):
        raw = bytes(v) if not isinstance(v, np.void) else v.tobytes()
        cb = ctypes.create_string_buffer(raw, len(raw))
        keep.append(cb)
        a.type = 8
        a.buffer = None
        a.size = len(raw)
        a.bytes = ctypes.addressof(cb)
        return None
    for cls, f in _ARG_SETTERS.items():   # subclasses of the known types
        if isinstance(v, cls):
            return f(a, v, keep)
    if isinstance(v, (bool, int, float)):
        raise _ArgError("a Python %s has no fixed C type; pass a NumPy scalar "
                        "(np.int32, np.uint32, np.int64, np.uint64, np.float32, "
                        "np.float64)" % type(v).__name__)
    raise _ArgError("%s is no kernel argument (a NumPy scalar, a Buffer, a "
                    "Region, read/write/rw(...), weft.local(n) or bytes)"
                    % type(v).__name__)


# Setters by exact type: each fills one weft_arg and returns the handle of
# the buffer it names (or None).
_ARG_SETTERS = {
    np.int32: _set_i32, np.uint32: _set_u32, np.int64: _set_i64,
    np.uint64: _set_u64, np.float32: _set_f32, np.float64: _set_f64,
    Region: _set_region, Access: _set_access, Local: _set_local,
    Buffer: _set_buffer,
}


# The packers below write weft_arg's bytes: 72 of them, rows at 40.
assert ctypes.sizeof(_lib.Arg) == 72 and _lib.Arg.rows.offset == 40


# A packer per signature of argument types (the tuple of their exact
# types): generated once per kernel and signature (_packer), it checks that
# the arguments have those types (else it returns _MISS), writes every
# weft_arg of a node with one struct.pack_into and returns the handles of
# the buffers it names that the graph does not use yet (or None). Bytes
# arguments, whose sizes matter, and types outside these get none.
_PACK_FORMATS = {
    np.int32: ("i4x8x8xQi36x", "2, 4, a%d"),
    np.uint32: ("i4x8x8xQI36x", "3, 4, a%d"),
    np.int64: ("i4x8x8xQq32x", "4, 8, a%d"),
    np.uint64: ("i4x8x8xQQ32x", "5, 8, a%d"),
    np.float32: ("i4x8x8xQf36x", "6, 4, a%d"),
    np.float64: ("i4x8x8xQd32x", "7, 8, a%d"),
    Local: ("i4xQ8xQ40x", "9, 0, a%d.nbytes"),
}
_REGION_OF = {Region: "a%d", Buffer: "a%d._whole", Access: "a%d.region"}


_MISS = object()   # a packer's answer to arguments of other types
_NARGS = 8         # a graph's weft_arg array holds at least as many


def _packer(sig):
    """The packing function of the argument types sig, or None."""
    # fmt/vals: every argument; rfmt/rvals: the same where every region
    # is a range (rows 0): the block fields are zero bytes, not read.
    fmt, vals, rfmt, rvals, lines, handles = ["="], [], ["="], [], [], []
    for i, t in enumerate(sig):
        if t in _REGION_OF:
            lines += ["r%d = %s" % (i, _REGION_OF[t] % i),
                      "b%d = r%d.buffer" % (i, i),
                      "p%d = b%d._p" % (i, i),
                      "if p%d is None:" % i,
                      "    raise destroyed('buffer')",
                      "w%d = r%d.rows" % (i, i)]
            mode = "a%d.mode" % i if t is Access else "3"
            fmt.append("iiQQQ8xQQQQ")
            vals.append("1, %s, p%d, r%d.offset, r%d.size, w%d, (r%d.slices or 1) "
                        "if w%d else 0, r%d.row_pitch, r%d.slice_pitch"
                        % (mode, i, i, i, i, i, i, i, i))
            rfmt.append("iiQQQ40x")
            rvals.append("1, %s, p%d, r%d.offset, r%d.size" % (mode, i, i, i))
            handles.append(i)
        elif t in _PACK_FORMATS:
            f, v = _PACK_FORMATS[t]
            fmt.append(f)
            vals.append(v % i)
            rfmt.append(f)
            rvals.append(v % i)
        else:
            return None
    n = len(sig)
    src = ["def pack(mem, args, users):"]
    if n:
        src += ["    try:",
                "        %s, = args" % ", ".join("a%d" % i for i in range(n)),
                "    except ValueError:",
                "        return MISS",
                "    if %s:" % " or ".join("type(a%d) is not T%d" % (i, i)
                                          for i in range(n)),
                "        return MISS"]
    else:
        src += ["    if args:", "        return MISS"]
    if n > _NARGS:
        src += ["    if len(mem) < %d:" % (72 * n), "        return MISS"]
    src += ["    " + x for x in lines]
    if handles:
        src += ["    if %s:" % " or ".join("w%d" % i for i in handles),
                "        pack_into(mem, 0, %s)" % ", ".join(vals),
                "    else:",
                "        pack_ranges(mem, 0, %s)" % ", ".join(rvals)]
    elif vals:
        src.append("    pack_into(mem, 0, %s)" % ", ".join(vals))
    src.append("    new = None")
    for i in handles:
        src += ["    h = b%d._h" % i,
                "    if h not in users:",
                "        new = [h] if new is None else new + [h]"]
    src.append("    return new")
    ns = {"pack_into": struct.Struct("".join(fmt)).pack_into,
          "pack_ranges": struct.Struct("".join(rfmt)).pack_into,
          "destroyed": destroyed, "MISS": _MISS}
    ns.update(("T%d" % i, t) for i, t in enumerate(sig))
    exec("\n".join(src), ns)
    return ns["pack"]


# Graph.kernel's batch: the kernel nodes of a graph wait in slots of _SLOT
# bytes (a weft_kernel_node, its args pointer to the slot's weft_arg array
# written once, then the arguments), _PEND_NODES of them, and are added by
# one weft_graph_add_kernels call (its stride _SLOT) before anything else
# uses the graph (Graph._flush). A node joins it only where everything that
# weft_graph_add_kernel checks is known to hold (see _batcher), so that the
# batch fails only for want of memory and every other error is raised by
# the Graph.kernel call that caused it, by the direct path.
_PEND_NODES = 64
_SLOT_ARGS = 8
_SLOT = 48 + 72 * _SLOT_ARGS
_HDR = struct.Struct("=I4xQ6I")   # weft_kernel_node past args: nargs, kernel, dims
assert (ctypes.sizeof(_lib.KernelNode) == 48 and _lib.KernelNode.args.offset == 0
        and _lib.KernelNode.nargs.offset == 8 and _lib.KernelNode.dims.offset == 24)
_SLOT_PTRS = struct.Struct("=" + "Q%dx" % (_SLOT - 8) * _PEND_NODES)


# The weft_arg of a scalar past its type: the type code, its size, the
# value's struct format.
_SCALAR_PARTS = {
    np.int32: (2, 4, "i"), np.uint32: (3, 4, "I"), np.int64: (4, 8, "q"),
    np.uint64: (5, 8, "Q"), np.float32: (6, 4, "f"), np.float64: (7, 8, "d"),
}


def _i32(v):
    return struct.pack("=i", v)


def _miss_add(g, grid, args):
    return _MISS


def _int_grid(grid):
    """True for a tuple of 1 to 3 ints (as a grid, exactly)."""
    return type(grid) is tuple and 0 < len(grid) <= 3 and all(type(x) is int for x in grid)


def _batcher(kernel, sig):
    """The batching function of kernel's argument types sig, or None.

    add(g, grid, args) returns _MISS unless args have the types sig and,
    for this node, weft_graph_add_kernel's checks hold: weft accepted this
    signature and grid for kernel before (its parameters, the grid's
    dims), kernel's module is used by g already (the same runtime), the
    ranges are inside their buffers, the buffers are open and of g's
    runtime, an access mode is one of the three and local memory has
    bytes. Then it appends the node to g's batch, counts the new buffers
    that g uses and returns the node's index.
    """
    n = len(sig)
    if n > _SLOT_ARGS:
        return None
    # The bytes past a node's args pointer: (struct format, value) pieces,
    # bytes for those that never change (joined, so that pack_into has
    # fewer values to convert).
    parts, lines = [("40s", "hdr")], []
    for i, t in enumerate(sig):
        if t in _REGION_OF:
            lines += ["r%d = %s" % (i, _REGION_OF[t] % i),
                      "b%d = r%d.buffer" % (i, i),
                      "p%d = b%d._p" % (i, i),
                      "if p%d is None or r%d.rows:" % (i, i),
                      "    return MISS",
                      "o%d = r%d.offset" % (i, i),
                      "s%d = r%d.size" % (i, i),
                      "left = b%d.size - o%d" % (i, i),
                      "if not 0 <= s%d <= left and (s%d != WHOLE or left < 0):" % (i, i),
                      "    return MISS",
                      "h%d = b%d._h" % (i, i),
                      "if h%d not in users:" % i,
                      "    if b%d.runtime is not g.runtime:" % i,
                      "        return MISS",
                      "    new = [h%d] if new is None else new + [h%d]" % (i, i)]
            parts.append(_i32(1))
            if t is Access:
                lines += ["m%d = a%d.mode" % (i, i),
                          "if not 0 < m%d < 4:" % i,
                          "    return MISS"]
                parts.append(("i", "m%d" % i))
            else:
                parts.append(_i32(3))
            parts += [("Q", "p%d" % i), ("Q", "o%d" % i), ("Q", "s%d" % i), bytes(40)]
        elif t is Local:
            lines += ["l%d = a%d.nbytes" % (i, i),
                      "if not l%d > 0:" % i,
                      "    return MISS"]
            parts += [_i32(9) + bytes(20), ("Q", "l%d" % i), bytes(40)]
        elif t in _SCALAR_PARTS:
            code, size, f = _SCALAR_PARTS[t]
            parts += [_i32(code) + bytes(20) + struct.pack("=Q", size), (f, "a%d" % i),
                      bytes(40 - struct.calcsize(f))]
        else:
            return None
    fmt, vals, const, consts = ["@"], [], b"", {}
    for x in parts + [None]:
        if type(x) is bytes:
            const += x
            continue
        if const and not any(const):
            fmt.append("%dx" % len(const))
        elif const:
            fmt.append("%ds" % len(const))
            vals.append("C%d" % len(consts))
            consts["C%d" % len(consts)] = const
        const = b""
        if x is not None:
            fmt.append(x[0])
            vals.append(x[1])
    packer = struct.Struct("".join(fmt))
    assert packer.size == 40 + 72 * n, (sig, fmt)
    src = ["def add(g, grid, args):",
           "    try:"]
    if n:
        src.append("        %s, = args" % ", ".join("a%d" % i for i in range(n)))
    else:
        src += ["        if args:", "            return MISS"]
    src += ["        hdr = H[grid]",
            "    except (ValueError, KeyError, TypeError):",
            "        return MISS"]
    if n:
        src += ["    if %s:" % " or ".join("type(a%d) is not T%d" % (i, i) for i in range(n)),
                "        return MISS"]
    # A closed graph's users are none; a closed module's kernels have
    # _add _miss_add.
    src += ["    if type(grid) is not int and not int_grid(grid):",
            "        return MISS",
            "    users = g._users",
            "    if MH not in users:",
            "        return MISS",
            "    new = None"]
    src += ["    " + x for x in lines]
    src += ["    i = g._pn",
            "    if i == %d:" % _PEND_NODES,
            "        g._room()",
            "        i = 0",
            "    node = g._nbase",
            "    if node is None:",
            "        node = g._sync()",
            "    pack_into(g._pmem, i * %d + 8, %s)" % (_SLOT, ", ".join(vals)),
            "    g._pn = i + 1",
            "    node += i",
            "    g._knodes[node] = K",
            "    if new is not None:",
            "        g._use(new)",
            "    return node"]
    ns = {"pack_into": packer.pack_into, "MISS": _MISS,
          "WHOLE": WHOLE, "H": kernel._hdrs.setdefault(n, {}), "K": kernel,
          "MH": kernel.module._h, "int_grid": _int_grid}
    ns.update(("T%d" % i, t) for i, t in enumerate(sig))
    ns.update(consts)
    exec("\n".join(src), ns)
    return ns["add"]


def _fill_arg(a, v, where, buffers, keep):
    """Set the weft_arg a from the Python value v (where: for messages)."""
    try:
        h = _ARG_SETTERS.get(type(v), _set_other)(a, v, keep)
    except _ArgError as e:
        raise TypeError("%s: %s" % (where, e)) from None
    if h is not None:
        buffers.append(h)


def _access_desc(d, acc):
    if not isinstance(acc, Access):
        acc = Access(acc, AccessMode.READ_WRITE)
    r = acc.region
    d.buffer = r.buffer._ptr()
    d.offset = r.offset
    d.size = r.size
    d.mode = acc.mode
    if r.rows:
        d.rows, d.slices = r.rows, max(r.slices, 1)
        d.row_pitch, d.slice_pitch = r.row_pitch, r.slice_pitch
    return acc


class _HostTask:
    """A Python callable run as a host task or map; remembers its failure."""

    def __init__(self, fn, accesses, graph_errors):
        self.fn = fn
        self.accesses = accesses
        self.errors = graph_errors
        self.node = None

    def run(self, ptrs, user):
        _tls.in_callback = getattr(_tls, "in_callback", 0) + 1
        try:
            arrays = [_region_array(ptrs[i], a.region)
                      for i, a in enumerate(self.accesses)]
            self.fn(*arrays)
            return 0
        except BaseException as e:
            self.errors.append((self.node, e))
            return 1
        finally:
            _tls.in_callback -= 1

    def run_map(self, ptr, size, user):
        _tls.in_callback = getattr(_tls, "in_callback", 0) + 1
        try:
            self.fn(_region_array(ptr, self.accesses[0].region))
        except BaseException as e:
            # A map node cannot fail in C: the error is kept, and the
            # launch's wait raises it.
            self.errors.append((self.node, e))
        finally:
            _tls.in_callback -= 1


def native_handle(x):
    """The integer handle of a driver object from another library.

    An int (0 for NULL); a ctypes pointer; an object with ``int_ptr``
    (PyOpenCL), ``ptr`` (CuPy's streams and events) or ``handle`` (PyCUDA),
    or one that converts with int().
    """
    if x is None:
        return 0
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, ctypes.c_void_p):
        return x.value or 0
    for attr in ("int_ptr", "ptr", "handle"):
        v = getattr(x, attr, None)
        if isinstance(v, (int, np.integer)):
            return int(v)
    if isinstance(x, (ctypes._Pointer, ctypes._CFuncPtr)):
        return ctypes.cast(x, ctypes.c_void_p).value or 0
    if hasattr(type(x), "__index__") or hasattr(type(x), "__int__"):
        return int(x)
    raise TypeError("%s is no native handle (an int, a ctypes pointer, or an "
                    "object with int_ptr, ptr or handle)" % type(x).__name__)


class NativeContext:
    """What a native node's function is given; valid during the call only.

    Attributes: driver ("cuda", "opencl", "host", "sim"), device (the
    Device the node runs on), node (its index), context, device_id and
    queue (the driver's handles as integers: CUcontext, CUdevice, CUstream;
    cl_context, cl_device_id, cl_command_queue; 0 on the host driver; the
    sim's own objects), count (the number of accesses).
    """

    __slots__ = ("_c", "_accs", "driver", "device", "node", "context",
                 "device_id", "queue", "count")

    def __init__(self, c, runtime, accs):
        self._c = c
        self._accs = accs
        self.driver = _s(_L.weft_native_driver(c))
        dev = _L.weft_native_device(c)
        self.device = runtime._device(dev) if dev and runtime else None
        self.node = _L.weft_native_node(c)
        self.context = _L.weft_native_context(c) or 0
        self.device_id = _L.weft_native_device_id(c) or 0
        self.queue = _L.weft_native_queue(c) or 0
        self.count = _L.weft_native_count(c)

    def _ctx(self, i):
        if self._c is None:
            raise BadState(-19, "NativeContext: used after its call returned")
        if not 0 <= i < self.count:
            raise IndexError("NativeContext: access %d of %d" % (i, self.count))
        return self._c

    def size(self, i):
        """The bytes of access i (a block's: first byte to one past its last)."""
        return _L.weft_native_size(self._ctx(i), i)

    def address(self, i):
        """CUDA: access i's CUdeviceptr; host: its address (an int)."""
        return _L.weft_native_address(self._ctx(i), i)

    def mem(self, i):
        """OpenCL: (the cl_mem holding access i, the offset of its first byte)."""
        off = ctypes.c_size_t()
        m = _L.weft_native_mem(self._ctx(i), i, _byref(off))
        return (m or 0, off.value)

    def ptr(self, i):
        """Host memory (host; sim with real data): access i's address, else 0."""
        return _L.weft_native_ptr(self._ctx(i), i) or 0

    def array(self, i):
        """A NumPy array over access i where the device's memory is host
        memory (2-D for a block), valid during the call; None elsewhere."""
        p = self.ptr(i)
        if not p:
            return None
        return _region_array(p, self._accs[i].region)


class _NativeTask:
    """The Python functions of one native node; remembers their failure."""

    def __init__(self, graph, accesses, graph_errors):
        self.graph = graph      # while the node is added
        self.accesses = accesses
        self.errors = graph_errors
        self.node = None

    def caller(self, fn):
        rt = weakref.ref(self.graph.runtime)   # no cycle through the callback

        def call(c, user):
            _tls.in_callback = getattr(_tls, "in_callback", 0) + 1
            ctx = None
            try:
                ctx = NativeContext(c, rt(), self.accesses)
                rc = fn(ctx)
                return 0 if rc is None else int(rc)
            except BaseException as e:
                self.errors.append((self.node, e))
                return 1
            finally:
                if ctx is not None:
                    ctx._c = None
                _tls.in_callback -= 1
        return call


class Graph(_Owner):
    """A graph of nodes, built with plain calls, instantiated into an Exec.

    Its result is that of running its nodes one by one, in the order they
    were added, on the host: weft infers the dependencies from the buffer
    accesses. Each add returns the node's index. Buffers and arrays that a
    node uses are kept alive by the graph and by every Exec made from it.
    """

    def __init__(self, runtime, handle):
        self.runtime = runtime
        self._own(handle)
        self._users = set()   # the handles its nodes use: buffers, modules
        self._keep = []       # arrays, callbacks, bytes the nodes use
        self._errors = []     # (node, exception) of failed Python tasks
        self._node = _c_uint32()
        self._node_ref = _byref(self._node)
        self._args = (_lib.Arg * _NARGS)()   # reused: weft copies the arguments
        self._argmem = memoryview(self._args).cast("B")
        self._cp = _c_void_p(handle.ptr)
        self._dims = {}                 # int grid -> weft_dims (group None)
        self._knodes = {}               # kernel node -> Kernel (set_arg's check)
        # The batch of kernel nodes not added yet (_batcher, _flush): _pn
        # slots of _pend (made by the first node: _pn full till then).
        # _nbase: the index of its first node, which is the graph's next
        # (None: ask weft; never while nodes wait).
        self._pend = None
        self._pn = _PEND_NODES
        self._nbase = 0

    def _use(self, handles):
        new = [h for h in handles if h not in self._users]
        if new:
            with _lock:
                for h in new:
                    h.count += 1
                    self._users.add(h)
                    self._h.parents.append(h)

    def _ptr(self):
        # Whatever uses the C graph sees the nodes of the batch first.
        if self._closed:
            raise destroyed("graph")
        if self._pn:
            self._flush()
        self._nbase = None
        return self._h.ptr

    def close(self):
        """Release this object: weft destroys it once nothing uses it."""
        self._users = frozenset()   # no node joins the batch
        _Owner.close(self)

    def _room(self):
        # A slot for the batch's next node.
        if self._pend is not None:
            self._flush()
            return
        self._pend = (ctypes.c_char * (_SLOT * _PEND_NODES))()
        self._pmem = memoryview(self._pend).cast("B")
        base = _addressof(self._pend)
        _SLOT_PTRS.pack_into(self._pmem, 0, *range(base + 48, base + _SLOT * _PEND_NODES, _SLOT))
        self._pn = 0

    def _flush(self):
        """Add the batch's kernel nodes to the C graph."""
        n = self._pn
        if not n or self._pend is None:
            return
        self._pn = 0
        added = ctypes.c_uint()
        rc = _L.weft_graph_add_kernels(self._cp, self._pend, n, _SLOT, _byref(added))
        first = self._nbase + added.value
        self._nbase += n
        if rc:
            # Only out of memory: the nodes from the one that failed on
            # were not added (their indices were returned).
            for i in range(first, self._nbase):
                self._knodes.pop(i, None)
            self._nbase = None
            err = from_last(rc)
            err.message += (" (Graph.kernel's nodes %d to %d were not added)"
                            % (first, first + n - added.value - 1))
            err.args = ("%s: %s" % (err.name, err.message),)
            raise err

    def _sync(self):
        # The index the next node gets, from weft (no node waits).
        self._nbase = _L.weft_graph_node_count(self._cp)
        return self._nbase

    def kernel(self, kernel, grid, *args, group=None):
        """Add a kernel node: kernel over grid (an int or a tuple of up to 3).

        args match the kernel's parameters: NumPy scalars (np.float32,
        np.uint32, np.int64...: Python ints and floats are refused, having
        no C type), buffers or regions (READ_WRITE unless given as
        weft.read(x), weft.write(x), weft.rw(x)), weft.local(nbytes), or
        bytes for a struct passed by value. group: items per group (None:
        weft chooses). weft checks the arguments against the kernel's
        parameters where it knows them (BadArguments names the argument).
        Returns the node's index.

        Nodes whose checks are known to pass (a signature of argument types
        and a grid that weft accepted for this kernel before, ranges inside
        their buffers) are gathered and added to weft together before the
        graph is used otherwise, so that an error in the arguments is
        raised by this call, and only running out of memory is raised by
        the call that adds the gathered nodes (e.g. instantiate).
        """
        if group is None:
            try:
                node = kernel._add(self, grid, args)
            except struct.error as e:
                raise OverflowError("Graph.kernel(%s): %s (an offset, a size or a "
                                    "scalar out of its C type's range)"
                                    % (kernel.name, e)) from None
            if node is not _MISS:
                return node
        return self._kernel(kernel, grid, args, group)

    def _dims_of(self, grid, group):
        d = _dims(grid, group)
        if group is None and type(grid) is int:
            self._dims[grid] = d
        return d

    def _kernel(self, kernel, grid, args, group):
        # Graph.kernel's direct path: check the arguments (the first time
        # for a signature of types), pack them, add the node by
        # weft_graph_add_kernel after the batch; then let the batch take
        # this signature and grid.
        if self._p is None:
            raise destroyed("graph")
        mod = kernel.module
        if mod._p is None:
            raise destroyed("module")
        sig = tuple(map(type, args))
        if sig not in kernel._packers:
            kernel._check(args, "Graph.kernel")
            if not any(t in _SIZED for t in sig):
                kernel._packers[sig] = _packer(sig)
        n = len(args)
        if n > len(self._args):
            self._args = (_lib.Arg * n)()
            self._argmem = memoryview(self._args).cast("B")
        pack = kernel._packers.get(sig)
        arr = self._args
        new = None
        if pack is not None:
            try:
                new = pack(self._argmem, args, self._users)
            except struct.error as e:
                raise OverflowError("Graph.kernel(%s): %s (an offset, a size or a "
                                    "scalar out of its C type's range)"
                                    % (kernel.name, e)) from None
        if pack is None or new is _MISS:
            new = []
            for i, v in enumerate(args):
                try:
                    h = _ARG_SETTERS.get(type(v), _set_other)(arr[i], v, self._keep)
                except _ArgError as e:
                    raise TypeError("Graph.kernel(%s): argument %d: %s"
                                    % (kernel.name, i, e)) from None
                if h is not None and h not in self._users:
                    new.append(h)
        d = self._dims.get(grid) if group is None else None
        if d is None:
            d = self._dims_of(grid, group)
        if self._pn:
            self._flush()
        rc = _add_kernel(self._cp, kernel._kcp, d, arr, n, self._node_ref)
        if rc:
            raise from_last(rc)
        self._use((new or []) + [mod._h])
        node = self._node.value
        self._nbase = node + 1
        self._knodes[node] = kernel
        if group is None and pack is not None:
            add = kernel._batchers.get(sig, _MISS)
            if add is _MISS:
                add = kernel._batchers[sig] = _batcher(kernel, sig)
            if add is not None:
                kernel._add = add
                hdrs = kernel._hdrs[n]
                if (type(grid) is int or _int_grid(grid)) and grid not in hdrs:
                    hdrs[grid] = _HDR.pack(n, kernel._kptr, *d.items, *d.group)
        return node

    def write(self, dst, src, offset=None):
        """Add a node writing the NumPy array src into dst (Buffer or Region).

        src is read when the node runs, at every launch: it is kept alive,
        and changing it changes what the next launch writes. For a block
        region, src is a 2-D (or 3-D) array whose rows the block's rows take.
        """
        r = _region(dst)
        src = _host_array(src, "Graph.write", contiguous=not r.rows)
        if r.rows:
            rp, sp = _host_pitches(src, r, "Graph.write")
            blk = r._block()
            check(_L.weft_graph_add_write_block(self._ptr(), r.buffer._ptr(), _byref(blk),
                                                src.ctypes.data, rp, sp, _byref(self._node)))
            self._keep.append(src)
            self._use([r.buffer._h])
            return self._node.value
        return self._transfer(_add_write, r, src, offset)

    def read(self, src, dst, offset=None):
        """Add a node reading src (Buffer or Region) into the NumPy array dst.

        dst gets the bytes when the node runs (after the launch's wait); it
        must be writeable and is kept alive.
        """
        r = _region(src)
        dst = _host_array(dst, "Graph.read", writeable=True, contiguous=not r.rows)
        if r.rows:
            rp, sp = _host_pitches(dst, r, "Graph.read")
            blk = r._block()
            check(_L.weft_graph_add_read_block(self._ptr(), r.buffer._ptr(), _byref(blk),
                                               dst.ctypes.data, rp, sp, _byref(self._node)))
            self._keep.append(dst)
            self._use([r.buffer._h])
            return self._node.value
        return self._transfer(_add_read, r, dst, offset)

    def _transfer(self, add, r, a, offset):
        # A write or read node between the range r and the C-contiguous
        # array a (kept with the graph).
        if self._p is None:
            self._ptr()
        b = r.buffer
        bp = b._p
        if bp is None:
            b._ptr()
        off = r.offset if offset is None else r.offset + offset
        if self._pn:
            self._flush()
        rc = add(self._cp, bp, off, _address(a), a.nbytes, self._node_ref)
        if rc:
            raise from_last(rc)
        self._keep.append(a)
        h = b._h
        if h not in self._users:
            self._use([h])
        node = self._node.value
        self._nbase = node + 1
        return node

    def copy(self, dst, src, size=None):
        """Add a buffer-to-buffer copy node (Buffers or Regions; blocks alike).

        size: bytes (default: the source region's, which for two ranges must
        fit the destination).
        """
        d, s = _region(dst), _region(src)
        if d.rows or s.rows:
            db, sb = d._block(), s._block()
            check(_L.weft_graph_add_copy_block(self._ptr(), d.buffer._ptr(), _byref(db),
                                               s.buffer._ptr(), _byref(sb),
                                               _byref(self._node)))
        else:
            n = s.nbytes() if size is None else size
            check(_L.weft_graph_add_copy(self._ptr(), d.buffer._ptr(), d.offset,
                                         s.buffer._ptr(), s.offset, n, _byref(self._node)))
        self._use([d.buffer._h, s.buffer._h])
        return self._node.value

    def fill(self, dst, value):
        """Add a node filling dst (Buffer or Region) with a 1, 2 or 4-byte pattern."""
        r = _region(dst)
        pat = _pattern(value, "Graph.fill")
        if r.rows:
            blk = r._block()
            check(_L.weft_graph_add_fill_block(self._ptr(), r.buffer._ptr(), _byref(blk),
                                               pat, len(pat), _byref(self._node)))
        else:
            check(_L.weft_graph_add_fill(self._ptr(), r.buffer._ptr(), r.offset, r.size,
                                         pat, len(pat), _byref(self._node)))
        self._use([r.buffer._h])
        return self._node.value

    def host(self, fn, *accesses):
        """Add a host task: fn(*arrays) on one of weft's worker threads.

        accesses are Buffers, Regions or read/write/rw(...) of them (a bare
        one is READ_WRITE); fn gets one NumPy array per access, over the
        access's bytes on the host (2-D for a block), valid during the
        call. fn runs holding the GIL, and must not wait on the graph that
        runs it. An exception in fn fails the node (its dependents are
        canceled) and the launch's wait raises IOFailure, whose message
        names the exception, with the exception as __cause__.
        """
        n = len(accesses)
        descs = (_lib.AccessDesc * max(n, 1))()
        accs = [_access_desc(descs[i], a) for i, a in enumerate(accesses)]
        task = _HostTask(fn, accs, self._errors)
        cb = _lib.HOST_STATUS_FN(task.run)
        check(_L.weft_graph_add_host_status(self._ptr(), cb, None, descs, n,
                                            _byref(self._node)))
        task.node = self._node.value
        self._keep.append(cb)
        self._use([a.region.buffer._h for a in accs])
        return task.node

    def map(self, target, fn):
        """Add a map node: fn(array) sees target's bytes on the host.

        target is a Buffer, a range Region, or read/write/rw(...) of one
        (bare: READ_WRITE). An exception in fn is raised by the launch's
        wait (a map node cannot fail in weft: its dependents still run).
        """
        acc = target if isinstance(target, Access) else Access(target, AccessMode.READ_WRITE)
        r = acc.region
        if r.rows:
            raise ValueError("Graph.map: a range, not a block")
        task = _HostTask(fn, [acc], self._errors)
        cb = _lib.MAP_FN(task.run_map)
        check(_L.weft_graph_add_map(self._ptr(), r.buffer._ptr(), r.offset, r.size,
                                    acc.mode, cb, None, _byref(self._node)))
        task.node = self._node.value
        self._keep.append(cb)
        self._use([r.buffer._h])
        return task.node

    def native(self, fn, *accesses, drivers=None, capture=False):
        """Add a native node: fn(ctx) called by weft on the node's device.

        fn gets a :class:`NativeContext`: the driver, the Device, the
        driver's native handles as integers (the CUcontext, CUdevice and
        CUstream on CUDA; the cl_context, cl_device_id and cl_command_queue
        on OpenCL) and, per access, the device address (CUDA), the cl_mem
        and offset (OpenCL) or a NumPy array over the bytes (host, sim with
        real data). On CUDA and OpenCL fn enqueues its work on ctx.queue
        (a CuPy ``ExternalStream(ctx.queue)``, a PyOpenCL queue from
        ``ctx.queue``, cuBLAS on that stream...) and returns without
        waiting; everything after the node waits for that work. On the host
        driver the work is done when fn returns. fn runs on a weft thread,
        holding the GIL only while it runs, and must not wait on the graph
        that runs it.

        fn may be a dict {driver: callable}: one implementation per driver.
        drivers: the drivers fn is for (a name or a list; None: every
        driver of the dict's keys, or, for one callable, every driver);
        placement puts the node on a device of one of them (set_device may
        choose). accesses: Buffers, Regions or read/write/rw(...) of them,
        made valid on the device before the call. fn returning None or 0
        succeeds; a non-zero int or an exception fails the node (IOFailure
        at the wait, dependents canceled, the exception its __cause__).
        capture=True: fn promises what weft_graph_set_native_capture asks
        (it enqueues only capturable work, never synchronises, and enqueues
        the same for the same ctx), so that launches may be recorded into
        and replayed as native graphs without calling it.
        """
        if isinstance(fn, dict):
            table = dict(fn)
            if drivers is not None:
                names = [drivers] if isinstance(drivers, str) else list(drivers)
                table = {d: table[d] for d in names}
        else:
            names = (("cuda", "opencl", "host", "sim") if drivers is None else
                     [drivers] if isinstance(drivers, str) else list(drivers))
            table = {d: fn for d in names}
        if not table:
            raise ValueError("Graph.native: no driver")
        for d, f in table.items():
            if not callable(f):
                raise TypeError("Graph.native: the function for %s is not callable" % d)
        n = len(accesses)
        descs = (_lib.AccessDesc * max(n, 1))()
        accs = [_access_desc(descs[i], a) for i, a in enumerate(accesses)]
        impls = (_lib.NativeImpl * len(table))()
        keep = []
        task = _NativeTask(self, accs, self._errors)
        for i, (d, f) in enumerate(table.items()):
            cb = _lib.NATIVE_FN(task.caller(f))
            name = d.encode()
            keep += [cb, name]
            impls[i].driver = name
            impls[i].type = 0
            impls[i].fn = cb
        task.graph = None
        check(_L.weft_graph_add_native(self._ptr(), impls, len(table), descs, n,
                                       None, _byref(self._node)))
        task.node = self._node.value
        self._keep.extend(keep)
        self._use([a.region.buffer._h for a in accs])
        if capture:
            check(_L.weft_graph_set_native_capture(self._ptr(), task.node, 1))
        return task.node

    def wait_event(self, driver, event, *accesses):
        """Add a node after which the graph's work waits for event.

        (weft_graph_add_event_wait) driver: "cuda" (event: a CUevent) or
        "opencl" (a cl_event of any context). event: an integer handle, or
        an object that carries one (a CuPy Event's ptr, a PyOpenCL Event's
        int_ptr, a PyCUDA Event's handle: see native_handle). The event is
        the program's: it must stay valid while a graph or Exec has the
        node. accesses order the node among the nodes that use those bytes;
        edge() orders it among others. A CUDA event never recorded counts
        as complete.
        """
        return self._event(_L.weft_graph_add_event_wait, driver, event, accesses)

    def record_event(self, driver, event, *accesses):
        """Add a node that records (CUDA) or signals (OpenCL) event.

        (weft_graph_add_event_record) The event completes once the work of
        the node's predecessors on its device is done. CUDA: a CUevent of
        the device's primary context; OpenCL: a user event
        (clCreateUserEvent), set CL_COMPLETE, which completes once: signal
        each launch with a new event, in a new graph. event as in
        wait_event.
        """
        return self._event(_L.weft_graph_add_event_record, driver, event, accesses)

    def _event(self, add, driver, event, accesses):
        h = native_handle(event)
        n = len(accesses)
        descs = (_lib.AccessDesc * max(n, 1))()
        accs = [_access_desc(descs[i], a) for i, a in enumerate(accesses)]
        check(add(self._ptr(), driver.encode(), h or None, descs, n,
                  _byref(self._node)))
        self._keep.append(event)   # the program's object, alive with the node
        self._use([a.region.buffer._h for a in accs])
        return self._node.value

    def empty(self):
        """Add a node that does nothing (a join point for edges)."""
        check(_L.weft_graph_add_empty(self._ptr(), _byref(self._node)))
        return self._node.value

    def edge(self, before, after):
        """Run node after once node before is done (Cycle if it closes one)."""
        check(_L.weft_graph_add_edge(self._ptr(), before, after))

    def set_device(self, node, device):
        """Run kernel node node on device (the user's placement)."""
        check(_L.weft_graph_set_device(self._ptr(), node, device._ptr()))

    def set_priority(self, node, priority=Priority.HIGH):
        """Give node a priority (Priority.HIGH or DEFAULT)."""
        check(_L.weft_graph_set_priority(self._ptr(), node,
                                         _enum(Priority, priority, "priority")))

    @property
    def node_count(self):
        """The number of nodes."""
        return _L.weft_graph_node_count(self._ptr())

    @property
    def edge_count(self):
        """The number of edges kept after inference and reduction."""
        return _L.weft_graph_edge_count(self._ptr())

    def dot(self):
        """The graph in Graphviz DOT (edges labelled with their hazards)."""
        return _dot(_L.weft_graph_write_dot, self._ptr())

    def _options(self, device, policy, native_graphs, place_scope, priority):
        o = _lib.ExecOptions()
        o.size = ctypes.sizeof(o)
        o.device = device._ptr() if device is not None else None
        o.policy = _enum(PlacePolicy, policy, "policy")
        o.native_graphs = _enum(NativeGraphs, native_graphs, "native_graphs")
        o.place_scope = _enum(PlaceScope, place_scope, "place_scope")
        o.priority = _enum(Priority, priority, "priority")
        return o

    def candidate_devices(self, node, device=None, policy=None, native_graphs=None,
                          place_scope=None, priority=None):
        """The Devices instantiate() with these options would choose among for node."""
        o = self._options(device, policy, native_graphs, place_scope, priority)
        n = ctypes.c_uint()
        devs = (_c_void_p * 64)()
        check(_L.weft_graph_candidate_devices(self._ptr(), node, _byref(o), devs, 64,
                                              _byref(n)))
        if n.value > 64:
            devs = (_c_void_p * n.value)()
            check(_L.weft_graph_candidate_devices(self._ptr(), node, _byref(o), devs,
                                                  n.value, _byref(n)))
        return [self.runtime._device(devs[i]) for i in range(n.value)]

    def instantiate(self, device=None, policy=None, native_graphs=None,
                    place_scope=None, priority=None):
        """Validate and lower the graph once into an Exec to launch many times.

        device: run every node there (None: weft places them); policy,
        native_graphs, place_scope, priority: as weft_exec_options (enums or
        their names). The Exec keeps what the graph's nodes use alive; the
        graph may be closed or changed afterwards.
        """
        o = self._options(device, policy, native_graphs, place_scope, priority)
        _drain()
        p = _c_void_p()
        check(_L.weft_graph_instantiate(self._ptr(), _byref(o), _byref(p)))
        users = list(self._users)
        h = _Handle("executable graph", p.value, _L.weft_exec_destroy,
                    [self.runtime._h] + users, keep=list(self._keep))
        e = Exec(self, h, self._errors)
        e._knodes = dict(self._knodes)
        return e


def _host_array(a, what, writeable=False, contiguous=True):
    if not isinstance(a, np.ndarray):
        raise TypeError("%s: a NumPy array is needed, not %s" % (what, type(a).__name__))
    if writeable and not a.flags.writeable:
        raise ValueError("%s: the array is not writeable" % what)
    if contiguous and not a.flags.c_contiguous:
        raise ValueError("%s: the array must be C-contiguous (a block region "
                         "takes rows of a 2-D array)" % what)
    return a


def _host_pitches(a, r, what):
    """Row and slice pitches of a host array for a block region."""
    st = a.strides
    if a.ndim < 2 or st[-1] != a.itemsize:
        if a.flags.c_contiguous:
            return r.size, r.size * r.rows
        raise ValueError("%s: the array's rows must be contiguous" % what)
    return st[-2], (st[-3] if a.ndim >= 3 else 0)


def _dot(fn, ptr):
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        f = _lib.libc.fopen(os.fsencode(path), b"w")
        if not f:
            raise OSError("cannot open %s" % path)
        try:
            check(fn(ptr, f))
        finally:
            _lib.libc.fclose(f)
        with open(path) as fh:
            return fh.read()
    finally:
        os.unlink(path)


class Exec(_Owner):
    """An executable graph: launch it (asynchronously) and wait, many times."""

    def __init__(self, graph, handle, errors):
        self.runtime = graph.runtime
        self._own(handle)
        self._cp = _c_void_p(handle.ptr)
        self._errors = errors
        self._seen = len(errors)
        self._knodes = {}     # kernel node -> Kernel, from the graph

    def launch(self):
        """Launch the graph (asynchronous); a relaunch runs after the last."""
        p = self._p
        if p is None:
            raise destroyed("executable graph")
        rc = _exec_launch(self._cp)
        if rc:
            raise from_last(rc)

    def wait(self):
        """Wait for every launch; raise the first failed node's error.

        A Python host task that raised makes this raise IOFailure (its
        message naming the node and the Python exception, which is the
        __cause__); a raising map callback re-raises its exception. (The
        executable graphs made from one graph share its tasks, so each
        reports the exceptions raised since its last report.)
        """
        p = self._p
        if p is None:
            raise destroyed("executable graph")
        rc = _exec_wait(self._cp)
        if rc or _deferred or len(self._errors) > self._seen:
            err = from_last(rc) if rc < 0 else None
            _drain()
            self._raise(err)

    def _raise(self, err):
        py = None
        if len(self._errors) > self._seen:
            py = self._errors[self._seen]
            self._seen = len(self._errors)
        if err is None and py is None:
            return
        if err is None:
            raise py[1]
        if py is not None:
            node, e = py
            err.message += " (node %s: the Python callable raised %s: %s)" % (
                node, type(e).__name__, e)
            err.args = ("%s: %s" % (err.name, err.message),)
            raise err from e
        raise err

    def launch_after(self, driver, queue):
        """Launch after the work queued so far on the program's own queue.

        (weft_exec_launch_after) driver: "cuda" (queue: a CUstream as an
        integer, 0 for the current context's default stream) or "opencl"
        (a cl_command_queue as an integer); like cuGraphLaunch on a stream.
        """
        p = self._p
        if p is None:
            raise destroyed("executable graph")
        check(_L.weft_exec_launch_after(p, driver.encode(), queue or None))

    def run(self):
        """Launch and wait."""
        self.launch()
        self.wait()

    def status(self):
        """True if idle and the last launch succeeded, False while running.

        A failed launch raises its error, as wait() does.
        """
        rc = _L.weft_exec_status(self._ptr())
        if rc == -13:
            return False
        self._raise(from_last(rc) if rc < 0 else None)
        return True

    def set_arg(self, node, index, value):
        """Change scalar (or bytes) argument index of kernel node node.

        value: a NumPy scalar of the argument's type, or bytes of its size;
        for the launches made after the call (waits for those made before).
        """
        k = self._knodes.get(node)
        params = k.params if k is not None else None
        if params is not None and 0 <= index < len(params):
            why = _arg_mismatch(value, params[index])
            if why:
                raise BadArguments(
                    -9, "Exec.set_arg(%s): node %d argument %d is %s, parameter "
                    "%d takes %s%s" % (k.name, node, index, _describe(value),
                                       index, params[index], why))
        a = _lib.Arg()
        keep = []
        _fill_arg(a, value, "Exec.set_arg: node %d argument %d" % (node, index), [], keep)
        if a.type in (1, 9):
            raise TypeError("Exec.set_arg: only scalar and bytes arguments change")
        check(_L.weft_exec_set_arg(self._ptr(), node, index, a))

    def node_device(self, node):
        """The Device node runs on (kernel nodes: where placement put it)."""
        p = _L.weft_exec_node_device(self._ptr(), node)
        if not p:
            raise from_last(-1)
        return self.runtime._device(p)

    def stats(self):
        """What the last finished launch did, as a dict (lanes: a list of dicts)."""
        s = _lib.ExecStats()
        s.size = ctypes.sizeof(s)
        check(_L.weft_exec_get_stats(self._ptr(), _byref(s)))
        out = {f: getattr(s, f) for f, _ in _lib.ExecStats._fields_
               if f not in ("size", "lanes", "nlanes")}
        out["lanes"] = [{
            "device": self.runtime._device(s.lanes[i].device),
            "role": _s(s.lanes[i].role),
            "ops": s.lanes[i].ops, "nodes": s.lanes[i].nodes,
            "busy_ns": s.lanes[i].busy_ns, "span_ns": s.lanes[i].span_ns,
        } for i in range(s.nlanes)]
        return out

    def enable_timings(self, on=True):
        """Time every node of the launches made from now on (node_timing)."""
        check(_L.weft_exec_enable_timings(self._ptr(), 1 if on else 0))

    def node_timing(self, node):
        """The timing of node in the last (timed) launch, as a dict of ns."""
        t = _lib.NodeTiming()
        t.size = ctypes.sizeof(t)
        check(_L.weft_exec_node_timing(self._ptr(), node, _byref(t)))
        return {"timed": bool(t.timed), "start_ns": t.start_ns, "end_ns": t.end_ns,
                "busy_ns": t.busy_ns}

    def dot(self):
        """The lowered plan in Graphviz DOT (devices, lanes, events, transfers)."""
        return _dot(_L.weft_exec_write_dot, self._ptr())
