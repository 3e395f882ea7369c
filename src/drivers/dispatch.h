/*
 * What the checked entry points share (dispatch.c, rect.c): the checks of
 * queues and memories, the missing-operation error and failure injection.
 * Private to src/drivers/.
 */
#ifndef WEFT_DRIVERS_DISPATCH_H
#define WEFT_DRIVERS_DISPATCH_H

#include "driver.h"

/* q is not NULL and not destroyed; else the error, naming op. */
int weft__drv_check_queue(const weft__queue *q, const char *op);
/* m is DEVICE memory of q's driver and, if same_ctx, of q's context. */
int weft__drv_check_mem(const weft__queue *q, const weft__mem *m,
                        const char *what, const char *op, int same_ctx);
/* WEFT_ENOTSUP: drv has no operation op. */
int weft__drv_missing(const weft__driver *drv, const char *op);
/* The injected error when "<driver>.<op>" is armed, else 0. */
int weft__drv_injected(const weft__driver *drv, const char *op, int code);

/* Fail with an injected error at "<driver>.<op>" when armed. */
#define WEFT__INJECT(drv, op, code)                                            \
    do {                                                                       \
        if (WEFT__UNLIKELY(                                                    \
                __atomic_load_n(&weft__fault_armed, __ATOMIC_RELAXED))) {      \
            int inj_ = weft__drv_injected((drv), (op), (code));                \
            if (inj_)                                                          \
                return inj_;                                                   \
        }                                                                      \
    } while (0)

#endif /* WEFT_DRIVERS_DISPATCH_H */
