/*
 * The part of the CUDA Driver API and of NVRTC that the cuda driver uses,
 * declared by weft itself: weft never includes the vendor headers (CI has
 * none) and loads both libraries at run time. Values are those of the
 * published ABI, which NVIDIA keeps stable across releases.
 *
 * Entry points are reached through tables of function pointers filled with
 * dlsym. Where the library exports several versions of a symbol, the table
 * names the versioned one first ("cuMemAlloc_v2"): the unversioned export
 * is the pre-CUDA-4 ABI with 32-bit sizes.
 */
#ifndef WEFT_CUDA_API_H
#define WEFT_CUDA_API_H

#include <stddef.h>

/* ---- types ------------------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef void CUhostFn(void *user);

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

/* ---- CUresult values ---------------------------------------------------- */

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_DEVICE_NOT_LICENSED = 102,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_JIT_COMPILATION_DISABLED = 223,
    CUDA_ERROR_CONTAINED = 226,
    CUDA_ERROR_INVALID_SOURCE = 300,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_TOO_MANY_PEERS = 711,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_NOT_READY = 802,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_TIMEOUT = 909,
    CUDA_ERROR_UNKNOWN = 999,
};

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
};

/* ---- attributes and flags ---------------------------------------------- */

enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 99,
};

enum {
    CU_STREAM_NON_BLOCKING = 0x1,
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_EVENT_RECORD_EXTERNAL = 0x1,
    CU_EVENT_WAIT_EXTERNAL = 0x1,
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_MEMORYTYPE_UNIFIED = 4,
    CU_MEMHOSTALLOC_PORTABLE = 0x1,
    CU_MEMHOSTALLOC_DEVICEMAP = 0x2,
    CU_MEMHOSTREGISTER_PORTABLE = 0x1,
};

/* CUjit_option values for cuModuleLoadDataEx. */
enum {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* ---- entry points ------------------------------------------------------ */

typedef CUresult weft__cu_GetErrorName_fn(CUresult res, const char **str);
typedef CUresult weft__cu_GetErrorString_fn(CUresult res, const char **str);
typedef CUresult weft__cu_Init_fn(unsigned flags);
typedef CUresult weft__cu_DriverGetVersion_fn(int *version);
typedef CUresult weft__cu_DeviceGetCount_fn(int *count);
typedef CUresult weft__cu_DeviceGet_fn(CUdevice *dev, int ordinal);
typedef CUresult weft__cu_DeviceGetName_fn(char *name, int len, CUdevice dev);
typedef CUresult weft__cu_DeviceTotalMem_fn(size_t *bytes, CUdevice dev);
typedef CUresult weft__cu_DeviceGetAttribute_fn(int *value, int attr,
                                                CUdevice dev);
typedef CUresult weft__cu_DeviceGetPCIBusId_fn(char *id, int len, CUdevice dev);
typedef CUresult weft__cu_DeviceCanAccessPeer_fn(int *can, CUdevice dev,
                                                 CUdevice peer);
typedef CUresult weft__cu_DevicePrimaryCtxRetain_fn(CUcontext *ctx,
                                                    CUdevice dev);
typedef CUresult weft__cu_DevicePrimaryCtxRelease_fn(CUdevice dev);
typedef CUresult weft__cu_CtxGetCurrent_fn(CUcontext *ctx);
typedef CUresult weft__cu_CtxSetCurrent_fn(CUcontext ctx);
typedef CUresult weft__cu_CtxGetStreamPriorityRange_fn(int *least,
                                                       int *greatest);
typedef CUresult weft__cu_CtxEnablePeerAccess_fn(CUcontext peer,
                                                 unsigned flags);
typedef CUresult
weft__cu_StreamCreateWithPriority_fn(CUstream *s, unsigned flags, int priority);
typedef CUresult weft__cu_StreamGetPriority_fn(CUstream s, int *priority);
typedef CUresult weft__cu_StreamDestroy_fn(CUstream s);
typedef CUresult weft__cu_StreamSynchronize_fn(CUstream s);
typedef CUresult weft__cu_StreamWaitEvent_fn(CUstream s, CUevent ev,
                                             unsigned flags);
typedef CUresult weft__cu_LaunchHostFunc_fn(CUstream s, CUhostFn *fn,
                                            void *user);
typedef CUresult weft__cu_StreamGetCtx_fn(CUstream s, CUcontext *ctx);
typedef CUresult weft__cu_EventCreate_fn(CUevent *ev, unsigned flags);
typedef CUresult weft__cu_EventDestroy_fn(CUevent ev);
typedef CUresult weft__cu_EventRecord_fn(CUevent ev, CUstream s);
typedef CUresult weft__cu_EventRecordWithFlags_fn(CUevent ev, CUstream s,
                                                  unsigned flags);
typedef CUresult weft__cu_EventQuery_fn(CUevent ev);
typedef CUresult weft__cu_EventSynchronize_fn(CUevent ev);
typedef CUresult weft__cu_EventElapsedTime_fn(float *ms, CUevent start,
                                              CUevent end);
typedef CUresult weft__cu_MemAlloc_fn(CUdeviceptr *ptr, size_t size);
typedef CUresult weft__cu_MemFree_fn(CUdeviceptr ptr);
typedef CUresult weft__cu_MemHostAlloc_fn(void **ptr, size_t size,
                                          unsigned flags);
typedef CUresult weft__cu_MemFreeHost_fn(void *ptr);
typedef CUresult weft__cu_PointerGetAttribute_fn(void *data, int attribute,
                                                 CUdeviceptr ptr);
typedef CUresult weft__cu_MemHostRegister_fn(void *ptr, size_t size,
                                             unsigned flags);
typedef CUresult weft__cu_MemHostUnregister_fn(void *ptr);
typedef CUresult weft__cu_MemcpyHtoDAsync_fn(CUdeviceptr dst, const void *src,
                                             size_t size, CUstream s);
typedef CUresult weft__cu_MemcpyDtoHAsync_fn(void *dst, CUdeviceptr src,
                                             size_t size, CUstream s);
typedef CUresult weft__cu_MemcpyDtoDAsync_fn(CUdeviceptr dst, CUdeviceptr src,
                                             size_t size, CUstream s);
typedef CUresult weft__cu_MemcpyAsync_fn(CUdeviceptr dst, CUdeviceptr src,
                                         size_t size, CUstream s);
/*
 * The _v2 layouts (size_t fields) of cuMemcpy2DAsync_v2 and
 * cuMemcpy3DAsync_v2; memory types are CU_MEMORYTYPE_* (an int); the
 * array and reserved fields stay NULL.
 */
typedef struct CUDA_MEMCPY2D {
    size_t srcXInBytes;
    size_t srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
} CUDA_MEMCPY2D;

typedef struct CUDA_MEMCPY3D {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    void *reserved0;
    size_t srcPitch;
    size_t srcHeight; /* rows per slice */
    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    void *reserved1;
    size_t dstPitch;
    size_t dstHeight;
    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
} CUDA_MEMCPY3D;

/* CUDA IPC (legacy: memory of cuMemAlloc). */
#define CU_IPC_HANDLE_SIZE                 64
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
typedef struct CUipcMemHandle {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;
typedef CUresult weft__cu_IpcGetMemHandle_fn(CUipcMemHandle *h, CUdeviceptr p);
typedef CUresult weft__cu_IpcOpenMemHandle_fn(CUdeviceptr *p, CUipcMemHandle h,
                                              unsigned flags);
typedef CUresult weft__cu_IpcCloseMemHandle_fn(CUdeviceptr p);
typedef CUresult weft__cu_MemGetAddressRange_fn(CUdeviceptr *base, size_t *size,
                                                CUdeviceptr p);

typedef CUresult weft__cu_Memcpy2DAsync_fn(const CUDA_MEMCPY2D *p, CUstream s);
typedef CUresult weft__cu_Memcpy3DAsync_fn(const CUDA_MEMCPY3D *p, CUstream s);
typedef CUresult weft__cu_MemsetD8Async_fn(CUdeviceptr dst, unsigned char v,
                                           size_t n, CUstream s);
typedef CUresult weft__cu_MemsetD16Async_fn(CUdeviceptr dst, unsigned short v,
                                            size_t n, CUstream s);
typedef CUresult weft__cu_MemsetD32Async_fn(CUdeviceptr dst, unsigned v,
                                            size_t n, CUstream s);
typedef CUresult weft__cu_ModuleLoadData_fn(CUmodule *mod, const void *image);
typedef CUresult weft__cu_ModuleLoadDataEx_fn(CUmodule *mod, const void *image,
                                              unsigned nopts, int *opts,
                                              void **values);
typedef CUresult weft__cu_ModuleUnload_fn(CUmodule mod);
typedef CUresult weft__cu_ModuleGetFunction_fn(CUfunction *fn, CUmodule mod,
                                               const char *name);
typedef CUresult weft__cu_FuncGetParamInfo_fn(CUfunction fn, size_t index,
                                              size_t *offset, size_t *size);
typedef CUresult weft__cu_LaunchKernel_fn(CUfunction fn, unsigned gx,
                                          unsigned gy, unsigned gz, unsigned bx,
                                          unsigned by, unsigned bz,
                                          unsigned shared, CUstream s,
                                          void **params, void **extra);

/* Graphs (stream capture into a graph, instantiated and launched). */
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
typedef CUresult weft__cu_StreamBeginCapture_fn(CUstream s, int mode);
typedef CUresult weft__cu_StreamEndCapture_fn(CUstream s, CUgraph *graph);
/* CUstreamCaptureStatus */
#define CU_STREAM_CAPTURE_STATUS_NONE        0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE      1
#define CU_STREAM_CAPTURE_STATUS_INVALIDATED 2
typedef CUresult weft__cu_StreamIsCapturing_fn(CUstream s, int *status);
typedef CUresult weft__cu_GraphInstantiateWithFlags_fn(CUgraphExec *exec,
                                                       CUgraph graph,
                                                       unsigned long long f);
typedef CUresult weft__cu_GraphLaunch_fn(CUgraphExec exec, CUstream s);
typedef CUresult weft__cu_GraphExecDestroy_fn(CUgraphExec exec);
typedef CUresult weft__cu_GraphDestroy_fn(CUgraph graph);
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExecUpdateResultInfo {
    int result; /* CUgraphExecUpdateResult */
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910
/* The CUDA 12 signature (cuGraphExecUpdate_v2). */
typedef CUresult weft__cu_GraphExecUpdate_fn(CUgraphExec exec, CUgraph graph,
                                             CUgraphExecUpdateResultInfo *info);

/*
 * X(member, required, symbol, fallback symbol or NULL). An optional entry
 * point that the library lacks stays NULL and the feature degrades
 * (cuFuncGetParamInfo appeared in CUDA 12.4: without it, kernels have
 * params_known = 0).
 */
#define WEFT__CUDA_FUNCS(X)                                                    \
    X(GetErrorName, 1, "cuGetErrorName", NULL)                                 \
    X(GetErrorString, 1, "cuGetErrorString", NULL)                             \
    X(Init, 1, "cuInit", NULL)                                                 \
    X(DriverGetVersion, 1, "cuDriverGetVersion", NULL)                         \
    X(DeviceGetCount, 1, "cuDeviceGetCount", NULL)                             \
    X(DeviceGet, 1, "cuDeviceGet", NULL)                                       \
    X(DeviceGetName, 1, "cuDeviceGetName", NULL)                               \
    X(DeviceTotalMem, 1, "cuDeviceTotalMem_v2", NULL)                          \
    X(DeviceGetAttribute, 1, "cuDeviceGetAttribute", NULL)                     \
    X(DeviceGetPCIBusId, 1, "cuDeviceGetPCIBusId", NULL)                       \
    X(DeviceCanAccessPeer, 1, "cuDeviceCanAccessPeer", NULL)                   \
    X(DevicePrimaryCtxRetain, 1, "cuDevicePrimaryCtxRetain", NULL)             \
    X(DevicePrimaryCtxRelease, 1, "cuDevicePrimaryCtxRelease_v2",              \
      "cuDevicePrimaryCtxRelease")                                             \
    X(CtxGetCurrent, 1, "cuCtxGetCurrent", NULL)                               \
    X(CtxSetCurrent, 1, "cuCtxSetCurrent", NULL)                               \
    X(CtxGetStreamPriorityRange, 1, "cuCtxGetStreamPriorityRange", NULL)       \
    X(CtxEnablePeerAccess, 1, "cuCtxEnablePeerAccess", NULL)                   \
    X(StreamCreateWithPriority, 1, "cuStreamCreateWithPriority", NULL)         \
    X(StreamGetPriority, 0, "cuStreamGetPriority", NULL)                       \
    X(StreamDestroy, 1, "cuStreamDestroy_v2", NULL)                            \
    X(StreamSynchronize, 1, "cuStreamSynchronize", NULL)                       \
    X(StreamWaitEvent, 1, "cuStreamWaitEvent", NULL)                           \
    X(LaunchHostFunc, 1, "cuLaunchHostFunc", NULL)                             \
    X(EventCreate, 1, "cuEventCreate", NULL)                                   \
    X(EventDestroy, 1, "cuEventDestroy_v2", NULL)                              \
    X(EventRecord, 1, "cuEventRecord", NULL)                                   \
    X(EventQuery, 1, "cuEventQuery", NULL)                                     \
    X(EventSynchronize, 1, "cuEventSynchronize", NULL)                         \
    X(EventElapsedTime, 1, "cuEventElapsedTime_v2", "cuEventElapsedTime")      \
    X(MemAlloc, 1, "cuMemAlloc_v2", NULL)                                      \
    X(MemFree, 1, "cuMemFree_v2", NULL)                                        \
    X(MemHostAlloc, 1, "cuMemHostAlloc", NULL)                                 \
    X(MemFreeHost, 1, "cuMemFreeHost", NULL)                                   \
    X(PointerGetAttribute, 1, "cuPointerGetAttribute", NULL)                   \
    X(MemHostRegister, 1, "cuMemHostRegister_v2", NULL)                        \
    X(MemHostUnregister, 1, "cuMemHostUnregister", NULL)                       \
    X(MemcpyHtoDAsync, 1, "cuMemcpyHtoDAsync_v2", NULL)                        \
    X(MemcpyDtoHAsync, 1, "cuMemcpyDtoHAsync_v2", NULL)                        \
    X(MemcpyDtoDAsync, 1, "cuMemcpyDtoDAsync_v2", NULL)                        \
    X(MemcpyAsync, 1, "cuMemcpyAsync", NULL)                                   \
    X(Memcpy2DAsync, 0, "cuMemcpy2DAsync_v2", NULL)                            \
    X(Memcpy3DAsync, 0, "cuMemcpy3DAsync_v2", NULL)                            \
    X(MemsetD8Async, 1, "cuMemsetD8Async", NULL)                               \
    X(MemsetD16Async, 1, "cuMemsetD16Async", NULL)                             \
    X(MemsetD32Async, 1, "cuMemsetD32Async", NULL)                             \
    X(ModuleLoadData, 1, "cuModuleLoadData", NULL)                             \
    X(ModuleLoadDataEx, 1, "cuModuleLoadDataEx", NULL)                         \
    X(ModuleUnload, 1, "cuModuleUnload", NULL)                                 \
    X(ModuleGetFunction, 1, "cuModuleGetFunction", NULL)                       \
    X(FuncGetParamInfo, 0, "cuFuncGetParamInfo", NULL)                         \
    X(LaunchKernel, 1, "cuLaunchKernel", NULL)                                 \
    X(StreamBeginCapture, 0, "cuStreamBeginCapture_v2", NULL)                  \
    X(StreamEndCapture, 0, "cuStreamEndCapture", NULL)                         \
    X(StreamIsCapturing, 0, "cuStreamIsCapturing", NULL)                       \
    X(GraphInstantiateWithFlags, 0, "cuGraphInstantiateWithFlags", NULL)       \
    X(GraphLaunch, 0, "cuGraphLaunch", NULL)                                   \
    X(GraphExecDestroy, 0, "cuGraphExecDestroy", NULL)                         \
    X(GraphDestroy, 0, "cuGraphDestroy", NULL)                                 \
    X(GraphExecUpdate, 0, "cuGraphExecUpdate_v2", NULL)                        \
    X(EventRecordWithFlags, 0, "cuEventRecordWithFlags", NULL)                 \
    X(StreamGetCtx, 0, "cuStreamGetCtx", NULL)                                 \
    X(MemGetAddressRange, 0, "cuMemGetAddressRange_v2", NULL)                  \
    X(IpcGetMemHandle, 0, "cuIpcGetMemHandle", NULL)                           \
    X(IpcOpenMemHandle, 0, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")      \
    X(IpcCloseMemHandle, 0, "cuIpcCloseMemHandle", NULL)

typedef struct weft__cuda_api {
    void *lib; /* dlopen handle; NULL until loaded */
#define WEFT__CUDA_MEMBER(m, req, sym, alt) weft__cu_##m##_fn *m;
    WEFT__CUDA_FUNCS(WEFT__CUDA_MEMBER)
#undef WEFT__CUDA_MEMBER
} weft__cuda_api;

typedef nvrtcResult weft__nvrtc_Version_fn(int *major, int *minor);
typedef const char *weft__nvrtc_GetErrorString_fn(nvrtcResult res);
typedef nvrtcResult weft__nvrtc_GetNumSupportedArchs_fn(int *n);
typedef nvrtcResult weft__nvrtc_GetSupportedArchs_fn(int *archs);
typedef nvrtcResult weft__nvrtc_CreateProgram_fn(nvrtcProgram *prog,
                                                 const char *src,
                                                 const char *name, int nheaders,
                                                 const char *const *headers,
                                                 const char *const *names);
typedef nvrtcResult weft__nvrtc_DestroyProgram_fn(nvrtcProgram *prog);
typedef nvrtcResult weft__nvrtc_CompileProgram_fn(nvrtcProgram prog, int nopts,
                                                  const char *const *opts);
typedef nvrtcResult weft__nvrtc_GetSize_fn(nvrtcProgram prog, size_t *size);
typedef nvrtcResult weft__nvrtc_GetBytes_fn(nvrtcProgram prog, char *out);

/*
 * X(member, type, required, symbol). Without the CUBIN entry points (NVRTC
 * before 11.1) weft asks for PTX and lets the driver compile it.
 */
#define WEFT__NVRTC_FUNCS(X)                                                   \
    X(Version, Version, 1, "nvrtcVersion")                                     \
    X(GetErrorString, GetErrorString, 1, "nvrtcGetErrorString")                \
    X(GetNumSupportedArchs, GetNumSupportedArchs, 0,                           \
      "nvrtcGetNumSupportedArchs")                                             \
    X(GetSupportedArchs, GetSupportedArchs, 0, "nvrtcGetSupportedArchs")       \
    X(CreateProgram, CreateProgram, 1, "nvrtcCreateProgram")                   \
    X(DestroyProgram, DestroyProgram, 1, "nvrtcDestroyProgram")                \
    X(CompileProgram, CompileProgram, 1, "nvrtcCompileProgram")                \
    X(GetProgramLogSize, GetSize, 1, "nvrtcGetProgramLogSize")                 \
    X(GetProgramLog, GetBytes, 1, "nvrtcGetProgramLog")                        \
    X(GetPTXSize, GetSize, 1, "nvrtcGetPTXSize")                               \
    X(GetPTX, GetBytes, 1, "nvrtcGetPTX")                                      \
    X(GetCUBINSize, GetSize, 0, "nvrtcGetCUBINSize")                           \
    X(GetCUBIN, GetBytes, 0, "nvrtcGetCUBIN")

typedef struct weft__nvrtc_api {
    void *lib;
    int major, minor;
#define WEFT__NVRTC_MEMBER(m, type, req, sym) weft__nvrtc_##type##_fn *m;
    WEFT__NVRTC_FUNCS(WEFT__NVRTC_MEMBER)
#undef WEFT__NVRTC_MEMBER
} weft__nvrtc_api;

#endif /* WEFT_CUDA_API_H */
