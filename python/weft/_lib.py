"""The C library and its declarations (ctypes).

Which libweft is loaded, in order: the path in the environment variable
PYWEFT_LIBRARY; a build tree's library next to this source tree
(``../../build/libweft.so`` from the package's folder, for tests and for
use straight from a clone); the clone's library that an install from it
recorded (``_where.py``, written by setup.py); then the system's
(``libweft.so.0`` on the loader's path, as ``cmake --install`` puts it). The variable's name does
not start with ``WEFT_``: libweft warns about WEFT_ variables it does not
know.
"""

import ctypes
import ctypes.util
import os

c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_long = ctypes.c_long
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
P = ctypes.POINTER

WHOLE = ctypes.c_size_t(-1).value


class RuntimeOptions(ctypes.Structure):
    """weft_runtime_options."""

    _fields_ = [
        ("size", c_size_t),
        ("devices", c_char_p),
        ("sim_config", c_char_p),
        ("host_devices", c_uint),
        ("host_threads", c_uint),
        ("device_mem_limit", c_uint64),
        ("place_policy", c_int),
        ("trace_file", c_char_p),
    ]


class DeviceInfo(ctypes.Structure):
    """weft_device_info."""

    _fields_ = [
        ("size", c_size_t),
        ("driver", c_char_p),
        ("index", c_uint),
        ("driver_index", c_uint),
        ("type", c_int),
        ("name", c_char_p),
        ("vendor", c_char_p),
        ("platform", c_char_p),
        ("driver_version", c_char_p),
        ("global_mem", c_uint64),
        ("max_alloc", c_uint64),
        ("local_mem", c_uint64),
        ("compute_units", c_uint),
        ("max_group_size", c_uint),
        ("arg_offset_align", c_uint),
        ("copy_engines", c_uint),
        ("concurrent_kernels", c_uint),
        ("timing_events", c_uint),
        ("pinned_host", c_uint),
        ("host_register", c_uint),
        ("unified_memory", c_uint),
        ("managed_memory", c_uint),
        ("svm", c_uint),
        ("queue_priority_low", c_int),
        ("queue_priority_high", c_int),
        ("cc_major", c_int),
        ("cc_minor", c_int),
        ("pci_bus_id", c_char_p),
        ("numa_node", c_int),
        ("cpuset", c_char_p),
        ("ncores", c_uint),
    ]


class ErrorDetail(ctypes.Structure):
    """weft_error_detail."""

    _fields_ = [
        ("code", c_int),
        ("driver", c_char_p),
        ("driver_code", c_long),
        ("driver_name", c_char_p),
        ("message", c_char_p),
    ]


STATS_FIELDS = [
    "h2d_bytes", "d2h_bytes", "peer_bytes",
    "h2d_copies", "d2h_copies", "peer_copies",
    "read_bytes", "host_bytes", "evict_bytes",
    "cached_bytes", "evictions", "writebacks",
    "pool_hits", "pool_misses", "pool_bytes",
    "staged_bytes", "pinned_bytes",
    "registered_buffers", "registered_bytes",
    "plan_events", "plan_waits", "evict_rounds",
]


class Stats(ctypes.Structure):
    """weft_stats."""

    _fields_ = [("size", c_size_t)] + [(f, c_uint64) for f in STATS_FIELDS]


class LaneStats(ctypes.Structure):
    """weft_lane_stats."""

    _fields_ = [
        ("device", c_void_p),
        ("role", c_char_p),
        ("ops", c_uint64),
        ("nodes", c_uint64),
        ("busy_ns", c_uint64),
        ("span_ns", c_uint64),
    ]


class ExecStats(ctypes.Structure):
    """weft_exec_stats."""

    _fields_ = [
        ("size", c_size_t),
        ("launches", c_uint64),
        ("nodes", c_uint64),
        ("events", c_uint64),
        ("waits", c_uint64),
        ("host_syncs", c_uint64),
        ("last_ns", c_uint64),
        ("timed", c_uint),
        ("devices_used", c_uint),
        ("native_launches", c_uint64),
        ("nlanes", c_uint),
        ("lanes", LaneStats * 64),
        ("native_replays", c_uint64),
        ("native_updates", c_uint64),
        ("native_graphs", c_uint),
    ]


class NodeTiming(ctypes.Structure):
    """weft_node_timing."""

    _fields_ = [
        ("size", c_size_t),
        ("timed", c_uint),
        ("start_ns", c_uint64),
        ("end_ns", c_uint64),
        ("busy_ns", c_uint64),
    ]


class ModuleSource(ctypes.Structure):
    """weft_module_source."""

    _fields_ = [
        ("kind", c_int),
        ("data", c_void_p),
        ("size", c_size_t),
        ("options", c_char_p),
        ("name", c_char_p),
    ]


class ArgValue(ctypes.Union):
    """The value union of weft_arg."""

    _fields_ = [
        ("i32", ctypes.c_int32),
        ("u32", ctypes.c_uint32),
        ("i64", ctypes.c_int64),
        ("u64", ctypes.c_uint64),
        ("f32", ctypes.c_float),
        ("f64", ctypes.c_double),
        ("bytes", c_void_p),
    ]


class Arg(ctypes.Structure):
    """weft_arg (the value union's members reachable as a.f32, a.u32...)."""

    _anonymous_ = ("value",)
    _fields_ = [
        ("type", c_int),
        ("access", c_int),
        ("buffer", c_void_p),
        ("offset", c_size_t),
        ("size", c_size_t),
        ("value", ArgValue),
        ("rows", c_size_t),
        ("slices", c_size_t),
        ("row_pitch", c_size_t),
        ("slice_pitch", c_size_t),
    ]


class Dims(ctypes.Structure):
    """weft_dims."""

    _fields_ = [("items", c_uint32 * 3), ("group", c_uint32 * 3)]


class KernelNode(ctypes.Structure):
    """weft_kernel_node."""

    _fields_ = [
        ("args", P(Arg)),
        ("nargs", c_uint),
        ("kernel", c_void_p),
        ("dims", Dims),
    ]


class Block(ctypes.Structure):
    """weft_block."""

    _fields_ = [
        ("origin", c_size_t),
        ("row_bytes", c_size_t),
        ("rows", c_size_t),
        ("slices", c_size_t),
        ("row_pitch", c_size_t),
        ("slice_pitch", c_size_t),
    ]


class AccessDesc(ctypes.Structure):
    """weft_access_desc."""

    _fields_ = [
        ("buffer", c_void_p),
        ("offset", c_size_t),
        ("size", c_size_t),
        ("mode", c_int),
        ("rows", c_size_t),
        ("slices", c_size_t),
        ("row_pitch", c_size_t),
        ("slice_pitch", c_size_t),
    ]


class DeviceAddress(ctypes.Structure):
    """weft_device_address."""

    _fields_ = [
        ("address", c_uint64),
        ("mem", c_void_p),
        ("offset", c_size_t),
        ("ptr", c_void_p),
    ]


class ExecOptions(ctypes.Structure):
    """weft_exec_options."""

    _fields_ = [
        ("size", c_size_t),
        ("device", c_void_p),
        ("policy", c_int),
        ("native_graphs", c_int),
        ("place_scope", c_int),
        ("priority", c_int),
    ]


HOST_STATUS_FN = ctypes.CFUNCTYPE(c_int, P(c_void_p), c_void_p)
MAP_FN = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_void_p)
LOG_FN = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_char_p, c_void_p)
NATIVE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p)


class ParamInfo(ctypes.Structure):
    """weft_param_info."""

    _fields_ = [("type", c_int), ("size", c_size_t)]


class NativeImpl(ctypes.Structure):
    """weft_native_impl."""

    _fields_ = [("driver", c_char_p), ("type", c_int), ("fn", NATIVE_FN)]

# name: (restype, argtypes). Every function returns an int status unless
# it says otherwise.
_SIGNATURES = {
    "weft_version": (c_char_p, []),
    "weft_strerror": (c_char_p, [c_int]),
    "weft_err_name": (c_char_p, [c_int]),
    "weft_last_error": (c_char_p, []),
    "weft_last_error_detail": (P(ErrorDetail), []),
    "weft_clear_error": (None, []),
    "weft_log_set_sink": (None, [LOG_FN, c_void_p]),
    "weft_log_set_level": (None, [c_int]),
    "weft_log_get_level": (c_int, []),
    "weft_param_type_size": (c_size_t, [c_int]),
    "weft_param_type_name": (c_char_p, [c_int]),
    "weft_runtime_create": (c_int, [P(c_void_p), P(RuntimeOptions)]),
    "weft_runtime_destroy": (c_int, [c_void_p]),
    "weft_runtime_driver_count": (c_uint, [c_void_p]),
    "weft_runtime_driver": (c_int, [c_void_p, c_uint, P(c_char_p), P(c_uint),
                                    P(c_int), P(c_char_p)]),
    "weft_runtime_device_count": (c_uint, [c_void_p]),
    "weft_runtime_device": (c_void_p, [c_void_p, c_uint]),
    "weft_device_get_info": (c_int, [c_void_p, P(DeviceInfo)]),
    "weft_device_can_access_peer": (c_int, [c_void_p, c_void_p, P(c_int)]),
    "weft_runtime_get_stats": (c_int, [c_void_p, P(Stats)]),
    "weft_module_create": (c_int, [c_void_p, P(ModuleSource), c_uint,
                                   P(c_void_p)]),
    "weft_module_destroy": (c_int, [c_void_p]),
    "weft_module_get_kernel": (c_int, [c_void_p, c_char_p, P(c_void_p)]),
    "weft_kernel_supports": (c_int, [c_void_p, c_void_p]),
    "weft_kernel_name": (c_char_p, [c_void_p]),
    "weft_kernel_param_count": (c_int, [c_void_p, P(c_uint)]),
    "weft_kernel_param_info": (c_int, [c_void_p, c_uint, P(ParamInfo)]),
    "weft_module_name": (c_char_p, [c_void_p]),
    "weft_module_build_log": (c_int, [c_void_p, c_void_p, c_char_p, c_size_t,
                                      P(c_size_t)]),
    "weft_buffer_create": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
    "weft_buffer_wrap": (c_int, [c_void_p, c_void_p, c_size_t, P(c_void_p)]),
    "weft_buffer_view": (c_int, [c_void_p, c_size_t, c_size_t, P(c_void_p)]),
    "weft_buffer_destroy": (c_int, [c_void_p]),
    "weft_buffer_size": (c_size_t, [c_void_p]),
    "weft_buffer_write": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
    "weft_buffer_read": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
    "weft_buffer_fill": (c_int, [c_void_p, c_size_t, c_size_t, c_void_p,
                                 c_size_t]),
    "weft_buffer_map": (c_int, [c_void_p, c_size_t, c_size_t, c_int,
                                P(c_void_p)]),
    "weft_buffer_unmap": (c_int, [c_void_p, c_void_p]),
    "weft_buffer_sync_host": (c_int, [c_void_p]),
    "weft_buffer_invalidate": (c_int, [c_void_p, c_size_t, c_size_t]),
    "weft_host_alloc": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
    "weft_host_free": (c_int, [c_void_p, c_void_p]),
    "weft_buffer_wrap_device": (c_int, [c_void_p, c_void_p, c_uint64, c_size_t,
                                        c_size_t, P(c_void_p)]),
    "weft_buffer_device_address": (c_int, [c_void_p, c_void_p, c_size_t,
                                           c_size_t, P(DeviceAddress)]),
    "weft_buffer_mark_device_written": (c_int, [c_void_p, c_void_p, c_size_t,
                                                c_size_t]),
    "weft_device_native": (c_int, [c_void_p, c_void_p, P(c_void_p),
                                   P(c_void_p)]),
    "weft_exec_launch_after": (c_int, [c_void_p, c_char_p, c_void_p]),
    "weft_graph_create": (c_int, [c_void_p, P(c_void_p)]),
    "weft_graph_destroy": (c_int, [c_void_p]),
    "weft_graph_add_kernel": (c_int, [c_void_p, c_void_p, Dims, P(Arg), c_uint,
                                      P(c_uint32)]),
    "weft_graph_add_kernels": (c_int, [c_void_p, c_void_p, c_uint, c_size_t,
                                       P(c_uint)]),
    "weft_graph_add_write": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                     c_size_t, P(c_uint32)]),
    "weft_graph_add_read": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                    c_size_t, P(c_uint32)]),
    "weft_graph_add_copy": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                    c_size_t, c_size_t, P(c_uint32)]),
    "weft_graph_add_fill": (c_int, [c_void_p, c_void_p, c_size_t, c_size_t,
                                    c_void_p, c_size_t, P(c_uint32)]),
    "weft_graph_add_write_block": (c_int, [c_void_p, c_void_p, P(Block),
                                           c_void_p, c_size_t, c_size_t,
                                           P(c_uint32)]),
    "weft_graph_add_read_block": (c_int, [c_void_p, c_void_p, P(Block),
                                          c_void_p, c_size_t, c_size_t,
                                          P(c_uint32)]),
    "weft_graph_add_copy_block": (c_int, [c_void_p, c_void_p, P(Block),
                                          c_void_p, P(Block), P(c_uint32)]),
    "weft_graph_add_fill_block": (c_int, [c_void_p, c_void_p, P(Block),
                                          c_void_p, c_size_t, P(c_uint32)]),
    "weft_graph_add_map": (c_int, [c_void_p, c_void_p, c_size_t, c_size_t,
                                   c_int, MAP_FN, c_void_p, P(c_uint32)]),
    "weft_graph_add_host_status": (c_int, [c_void_p, HOST_STATUS_FN, c_void_p,
                                           P(AccessDesc), c_uint,
                                           P(c_uint32)]),
    "weft_graph_add_empty": (c_int, [c_void_p, P(c_uint32)]),
    "weft_graph_add_native": (c_int, [c_void_p, P(NativeImpl), c_uint,
                                      P(AccessDesc), c_uint, c_void_p,
                                      P(c_uint32)]),
    "weft_graph_set_native_capture": (c_int, [c_void_p, c_uint32, c_int]),
    "weft_graph_add_event_wait": (c_int, [c_void_p, c_char_p, c_void_p,
                                          P(AccessDesc), c_uint, P(c_uint32)]),
    "weft_graph_add_event_record": (c_int, [c_void_p, c_char_p, c_void_p,
                                            P(AccessDesc), c_uint,
                                            P(c_uint32)]),
    "weft_native_driver": (c_char_p, [c_void_p]),
    "weft_native_device": (c_void_p, [c_void_p]),
    "weft_native_node": (c_uint32, [c_void_p]),
    "weft_native_context": (c_void_p, [c_void_p]),
    "weft_native_device_id": (c_void_p, [c_void_p]),
    "weft_native_queue": (c_void_p, [c_void_p]),
    "weft_native_count": (c_uint, [c_void_p]),
    "weft_native_size": (c_size_t, [c_void_p, c_uint]),
    "weft_native_address": (c_uint64, [c_void_p, c_uint]),
    "weft_native_mem": (c_void_p, [c_void_p, c_uint, P(c_size_t)]),
    "weft_native_ptr": (c_void_p, [c_void_p, c_uint]),
    "weft_graph_add_edge": (c_int, [c_void_p, c_uint32, c_uint32]),
    "weft_graph_set_device": (c_int, [c_void_p, c_uint32, c_void_p]),
    "weft_graph_set_priority": (c_int, [c_void_p, c_uint32, c_int]),
    "weft_graph_node_count": (c_uint, [c_void_p]),
    "weft_graph_edge_count": (c_uint, [c_void_p]),
    "weft_graph_write_dot": (c_int, [c_void_p, c_void_p]),
    "weft_place_policy_name": (c_char_p, [c_int]),
    "weft_graph_candidate_devices": (c_int, [c_void_p, c_uint32,
                                             P(ExecOptions), P(c_void_p),
                                             c_uint, P(c_uint)]),
    "weft_graph_instantiate": (c_int, [c_void_p, P(ExecOptions),
                                       P(c_void_p)]),
    "weft_exec_launch": (c_int, [c_void_p]),
    "weft_exec_wait": (c_int, [c_void_p]),
    "weft_exec_status": (c_int, [c_void_p]),
    "weft_exec_destroy": (c_int, [c_void_p]),
    "weft_exec_set_arg": (c_int, [c_void_p, c_uint, c_uint, Arg]),
    "weft_exec_node_device": (c_void_p, [c_void_p, c_uint]),
    "weft_exec_get_stats": (c_int, [c_void_p, P(ExecStats)]),
    "weft_exec_enable_timings": (c_int, [c_void_p, c_int]),
    "weft_exec_node_timing": (c_int, [c_void_p, c_uint32, P(NodeTiming)]),
    "weft_exec_write_dot": (c_int, [c_void_p, c_void_p]),
}


def _candidates():
    env = os.environ.get("PYWEFT_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, os.pardir, os.pardir, "build", "libweft.so")]
    try:
        from . import _where   # written by an install from a clone (setup.py)
        if _where.BUILD_LIBRARY:
            out.append(_where.BUILD_LIBRARY)
    except ImportError:
        pass
    found = ctypes.util.find_library("weft")
    out.append(found or "libweft.so.0")
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("weft: libweft not found; tried " + "; ".join(tried) +
                      ". Set PYWEFT_LIBRARY to the path of libweft.so")


lib, path = _load()
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

libc = ctypes.CDLL(None)
libc.fopen.restype = c_void_p
libc.fopen.argtypes = [c_char_p, c_char_p]
libc.fclose.argtypes = [c_void_p]
