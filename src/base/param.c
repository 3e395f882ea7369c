/* Kernel parameter types. */
#include "base.h"

size_t weft_param_type_size(weft_param_type type)
{
    switch (type) {
    case WEFT_PARAM_I32:
    case WEFT_PARAM_U32:
    case WEFT_PARAM_F32:
        return 4;
    case WEFT_PARAM_I64:
    case WEFT_PARAM_U64:
    case WEFT_PARAM_F64:
        return 8;
    case WEFT_PARAM_UNKNOWN:
    case WEFT_PARAM_BUFFER:
    case WEFT_PARAM_BYTES:
    case WEFT_PARAM_LOCAL:
        break;
    }
    return 0;
}

const char *weft_param_type_name(weft_param_type type)
{
    switch (type) {
    case WEFT_PARAM_BUFFER:
        return "buffer";
    case WEFT_PARAM_I32:
        return "i32";
    case WEFT_PARAM_U32:
        return "u32";
    case WEFT_PARAM_I64:
        return "i64";
    case WEFT_PARAM_U64:
        return "u64";
    case WEFT_PARAM_F32:
        return "f32";
    case WEFT_PARAM_F64:
        return "f64";
    case WEFT_PARAM_BYTES:
        return "bytes";
    case WEFT_PARAM_LOCAL:
        return "local";
    case WEFT_PARAM_UNKNOWN:
        break;
    }
    return "unknown";
}
