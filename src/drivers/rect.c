/*
 * Block copies (weft__rect, driver.h): the checked entry points
 * weft__drv_copy_<dir>_rect and their checks, the row-by-row fallback
 * where a driver has no block operation or declines a block, and the
 * same through a submission (submit.h).
 *
 * The checks make what a driver sees simple: pitches filled in, every
 * extent > 0, both sides inside their memory, the two sides of one memory
 * disjoint (weft__block_overlap, exact on rows), contiguous rows folded,
 * and a block that is one range handed to the 1-D copy.
 */
#include "dispatch.h"
#include "submit.h"

unsigned weft__drv_rect_rows;

/* The rows of a block in address order: row y of slice z. */
typedef struct weft__block_rows {
    const weft__block *b;
    size_t y, z;
} weft__block_rows;

static uintptr_t weft__block_row(const weft__block_rows *it)
{
    return it->b->lo + it->z * it->b->slice_pitch + it->y * it->b->row_pitch;
}

/* 0 once past the last row. */
static int weft__block_next(weft__block_rows *it)
{
    if (++it->y == it->b->height) {
        it->y = 0;
        it->z++;
    }
    return it->z < it->b->depth;
}

/*
 * Rows of one block are sorted and disjoint (row_pitch >= width,
 * slice_pitch >= row_pitch * height), so one merge of the two row lists
 * finds a shared byte, or shows there is none.
 */
int weft__block_overlap(const weft__block *a, const weft__block *b)
{
    weft__block_rows ia = {a, 0, 0}, ib = {b, 0, 0};
    uintptr_t a_end, b_end;

    if (!a->width || !a->height || !a->depth || !b->width || !b->height ||
        !b->depth)
        return 0;
    a_end = a->lo + (a->depth - 1) * a->slice_pitch +
            (a->height - 1) * a->row_pitch + a->width;
    b_end = b->lo + (b->depth - 1) * b->slice_pitch +
            (b->height - 1) * b->row_pitch + b->width;
    if (a->lo >= b_end || b->lo >= a_end)
        return 0;
    for (;;) {
        uintptr_t lo_a = weft__block_row(&ia), hi_a = lo_a + a->width;
        uintptr_t lo_b = weft__block_row(&ib), hi_b = lo_b + b->width;

        if (lo_a < hi_b && lo_b < hi_a)
            return 1;
        if (hi_a <= hi_b ? !weft__block_next(&ia) : !weft__block_next(&ib))
            return 0;
    }
}

/* One side's pitches: 0 means packed; checked against the extent. */
static int weft__rect_pitches(weft__rect *r, weft__rect_side *s,
                              const char *what, const char *op)
{
    size_t packed;

    if (!s->row_pitch)
        s->row_pitch = r->width;
    if (s->row_pitch < r->width)
        return weft__error(WEFT_EINVAL,
                           "%s: %s row pitch %zu is less than the %zu bytes "
                           "of a row",
                           op, what, s->row_pitch, r->width);
    if (__builtin_mul_overflow(s->row_pitch, r->height, &packed))
        return weft__error(WEFT_ERANGE,
                           "%s: %s row pitch %zu times %zu rows overflows", op,
                           what, s->row_pitch, r->height);
    if (!s->slice_pitch || (r->depth == 1 && s->slice_pitch < packed))
        s->slice_pitch = packed;
    if (s->slice_pitch < packed)
        return weft__error(WEFT_EINVAL,
                           "%s: %s slice pitch %zu is less than %zu rows of "
                           "pitch %zu",
                           op, what, s->slice_pitch, r->height, s->row_pitch);
    return 0;
}

/* One side inside its memory (m), or its addresses not wrapping (host). */
static int weft__rect_fits(const weft__rect *r, const weft__rect_side *s,
                           const weft__mem *m, const char *what, const char *op)
{
    size_t a, b, span, end;

    if (__builtin_mul_overflow(r->depth - 1, s->slice_pitch, &a) ||
        __builtin_mul_overflow(r->height - 1, s->row_pitch, &b) ||
        __builtin_add_overflow(a, b, &span) ||
        __builtin_add_overflow(span, r->width, &span) ||
        __builtin_add_overflow(s->off, span, &end))
        return weft__error(WEFT_ERANGE,
                           "%s: %s block of %zux%zux%zu bytes at %zu "
                           "(pitches %zu, %zu) overflows",
                           op, what, r->width, r->height, r->depth, s->off,
                           s->row_pitch, s->slice_pitch);
    if (m && end > m->size)
        return weft__error(WEFT_ERANGE,
                           "%s: %s block of %zux%zux%zu bytes at %zu "
                           "(pitches %zu, %zu) ends at byte %zu, outside the "
                           "allocation of %zu bytes",
                           op, what, r->width, r->height, r->depth, s->off,
                           s->row_pitch, s->slice_pitch, end, m->size);
    return 0;
}

/*
 * Fold what is contiguous on both sides: rows into one row, single-row
 * slices into rows, slices into one row.
 */
static void weft__rect_fold(weft__rect *r)
{
    if (r->height > 1 && r->dst.row_pitch == r->width &&
        r->src.row_pitch == r->width) {
        r->width *= r->height;
        r->height = 1;
        r->dst.row_pitch = r->src.row_pitch = r->width;
    }
    if (r->depth > 1 && r->height == 1) {
        r->height = r->depth;
        r->depth = 1;
        r->dst.row_pitch = r->dst.slice_pitch;
        r->src.row_pitch = r->src.slice_pitch;
        if (r->dst.row_pitch == r->width && r->src.row_pitch == r->width) {
            r->width *= r->height;
            r->height = 1;
            r->dst.row_pitch = r->src.row_pitch = r->width;
        }
        r->dst.slice_pitch = r->dst.row_pitch * r->height;
        r->src.slice_pitch = r->src.row_pitch * r->height;
    }
}

static weft__block weft__rect_block(const weft__rect *r,
                                    const weft__rect_side *s)
{
    weft__block b = {s->off,   r->width,     r->height,
                     r->depth, s->row_pitch, s->slice_pitch};
    return b;
}

typedef enum weft__rect_kind {
    WEFT__RECT_H2D,
    WEFT__RECT_D2H,
    WEFT__RECT_D2D,
    WEFT__RECT_PEER,
} weft__rect_kind;

static const char *const weft__rect_ops[] = {"copy_h2d_rect", "copy_d2h_rect",
                                             "copy_d2d_rect", "copy_peer_rect"};

static int weft__check_rect(weft__rect_kind kind, weft__queue *q,
                            weft__mem *dst, const void *dst_host,
                            weft__mem *src, const void *src_host,
                            const weft__rect *r, weft__rect *out)
{
    const char *op = weft__rect_ops[kind];
    int same_ctx = kind != WEFT__RECT_PEER;
    weft__block bd, bs;
    int rc;

    if ((rc = weft__drv_check_queue(q, op)) < 0)
        return rc;
    if (kind != WEFT__RECT_D2H &&
        (rc = weft__drv_check_mem(q, dst, "destination", op, same_ctx)) < 0)
        return rc;
    if (kind != WEFT__RECT_H2D &&
        (rc = weft__drv_check_mem(q, src, "source", op, same_ctx)) < 0)
        return rc;
    if (kind == WEFT__RECT_H2D && !src_host)
        return weft__error(WEFT_EINVAL, "%s: source pointer is NULL", op);
    if (kind == WEFT__RECT_D2H && !dst_host)
        return weft__error(WEFT_EINVAL, "%s: destination pointer is NULL", op);
    if (!r)
        return weft__error(WEFT_EINVAL, "%s: block is NULL", op);
    if (kind == WEFT__RECT_PEER) {
        if (dst->ctx->dev == src->ctx->dev)
            return weft__error(WEFT_EINVAL,
                               "%s: source and destination are both on "
                               "device %s (use copy_d2d_rect)",
                               op, dst->ctx->dev->name);
        if (dst->ctx != q->ctx && src->ctx != q->ctx)
            return weft__error(WEFT_EINVAL,
                               "%s: the queue's device %s is neither the "
                               "source's nor the destination's",
                               op, q->ctx->dev->name);
    }
    *out = *r;
    if (!r->width || !r->height || !r->depth)
        return 1;
    if ((rc = weft__rect_pitches(out, &out->dst, "destination", op)) < 0 ||
        (rc = weft__rect_pitches(out, &out->src, "source", op)) < 0 ||
        (rc = weft__rect_fits(out, &out->dst, dst, "destination", op)) < 0 ||
        (rc = weft__rect_fits(out, &out->src, src, "source", op)) < 0)
        return rc;
    bd = weft__rect_block(out, &out->dst);
    bs = weft__rect_block(out, &out->src);
    if (dst && dst == src && weft__block_overlap(&bd, &bs))
        return weft__error(WEFT_EINVAL,
                           "%s: source and destination blocks overlap", op);
    weft__rect_fold(out);
    return 0;
}

int weft__drv_check_copy_h2d_rect(weft__queue *q, weft__mem *dst,
                                  const void *src, const weft__rect *r,
                                  weft__rect *out)
{
    weft__rect tmp;
    int rc = weft__check_rect(WEFT__RECT_H2D, q, dst, NULL, NULL, src, r,
                              out ? out : &tmp);

    if (rc == 0 && !q->drv->copy_h2d)
        return weft__drv_missing(q->drv, "copy_h2d");
    return rc;
}

int weft__drv_check_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                                  const weft__rect *r, weft__rect *out)
{
    weft__rect tmp;
    int rc = weft__check_rect(WEFT__RECT_D2H, q, NULL, dst, src, NULL, r,
                              out ? out : &tmp);

    if (rc == 0 && !q->drv->copy_d2h)
        return weft__drv_missing(q->drv, "copy_d2h");
    return rc;
}

int weft__drv_check_copy_d2d_rect(weft__queue *q, weft__mem *dst,
                                  weft__mem *src, const weft__rect *r,
                                  weft__rect *out)
{
    weft__rect tmp;
    int rc = weft__check_rect(WEFT__RECT_D2D, q, dst, NULL, src, NULL, r,
                              out ? out : &tmp);

    if (rc == 0 && !q->drv->copy_d2d)
        return weft__drv_missing(q->drv, "copy_d2d");
    return rc;
}

int weft__drv_check_copy_peer_rect(weft__queue *q, weft__mem *dst,
                                   weft__mem *src, const weft__rect *r,
                                   weft__rect *out)
{
    weft__rect tmp;
    int rc = weft__check_rect(WEFT__RECT_PEER, q, dst, NULL, src, NULL, r,
                              out ? out : &tmp);

    if (rc == 0 && !q->drv->copy_peer)
        return weft__drv_missing(q->drv, "copy_peer");
    return rc;
}

/*
 * The block one contiguous row at a time, through the 1-D operation: of
 * the driver (sub NULL) or of a submission.
 */
static int weft__rect_by_rows(weft__rect_kind kind, const weft__submit *sub,
                              weft__queue *q, weft__mem *dst, void *dst_host,
                              weft__mem *src, const void *src_host,
                              const weft__rect *r)
{
    const weft__driver *drv = q->drv;

    for (size_t z = 0; z < r->depth; z++)
        for (size_t y = 0; y < r->height; y++) {
            size_t d =
                r->dst.off + z * r->dst.slice_pitch + y * r->dst.row_pitch;
            size_t s =
                r->src.off + z * r->src.slice_pitch + y * r->src.row_pitch;
            const char *hs;
            char *hd;
            size_t w = r->width;
            int rc;

            switch (kind) {
            case WEFT__RECT_H2D:
                hs = (const char *)src_host + s;
                rc = sub ? sub->copy_h2d(sub->self, q, dst, d, hs, w)
                         : drv->copy_h2d(q, dst, d, hs, w);
                break;
            case WEFT__RECT_D2H:
                hd = (char *)dst_host + d;
                rc = sub ? sub->copy_d2h(sub->self, q, hd, src, s, w)
                         : drv->copy_d2h(q, hd, src, s, w);
                break;
            case WEFT__RECT_D2D:
                rc = sub ? sub->copy_d2d(sub->self, q, dst, d, src, s, w)
                         : drv->copy_d2d(q, dst, d, src, s, w);
                break;
            default:
                rc = sub ? sub->copy_peer(sub->self, q, dst, d, src, s, w)
                         : drv->copy_peer(q, dst, d, src, s, w);
                break;
            }
            if (rc < 0)
                return rc;
        }
    return 0;
}

/*
 * After the checks: the driver's operation (op, NULL if none) for a block
 * of several rows, unless it declines (1) or tests force rows.
 */
#define WEFT__RECT_RUN(name, b, call, ...)                                     \
    do {                                                                       \
        WEFT__INJECT(q->drv, name, WEFT_EDRIVER);                              \
        if (q->drv->call && !weft__drv_rect_rows &&                            \
            (b).height * (b).depth > 1 &&                                      \
            (rc = q->drv->call(q, __VA_ARGS__, &(b))) <= 0)                    \
            return rc;                                                         \
    } while (0)

int weft__drv_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r)
{
    weft__rect b;
    int rc = weft__drv_check_copy_h2d_rect(q, dst, src, r, &b);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    WEFT__RECT_RUN("copy_h2d_rect", b, copy_h2d_rect, dst, src);
    return weft__rect_by_rows(WEFT__RECT_H2D, NULL, q, dst, NULL, NULL, src,
                              &b);
}

int weft__drv_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r)
{
    weft__rect b;
    int rc = weft__drv_check_copy_d2h_rect(q, dst, src, r, &b);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    WEFT__RECT_RUN("copy_d2h_rect", b, copy_d2h_rect, dst, src);
    return weft__rect_by_rows(WEFT__RECT_D2H, NULL, q, NULL, dst, src, NULL,
                              &b);
}

int weft__drv_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r)
{
    weft__rect b;
    int rc = weft__drv_check_copy_d2d_rect(q, dst, src, r, &b);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    WEFT__RECT_RUN("copy_d2d_rect", b, copy_d2d_rect, dst, src);
    return weft__rect_by_rows(WEFT__RECT_D2D, NULL, q, dst, NULL, src, NULL,
                              &b);
}

int weft__drv_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r)
{
    weft__rect b;
    int rc = weft__drv_check_copy_peer_rect(q, dst, src, r, &b);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    WEFT__RECT_RUN("copy_peer_rect", b, copy_peer_rect, dst, src);
    return weft__rect_by_rows(WEFT__RECT_PEER, NULL, q, dst, NULL, src, NULL,
                              &b);
}

int weft__submit_copy_h2d_rect(const weft__submit *s, weft__queue *q,
                               weft__mem *dst, const void *src,
                               const weft__rect *r)
{
    weft__rect b;
    int rc;

    if (!s)
        return weft__drv_copy_h2d_rect(q, dst, src, r);
    if (s->copy_h2d_rect)
        return s->copy_h2d_rect(s->self, q, dst, src, r);
    if ((rc = weft__drv_check_copy_h2d_rect(q, dst, src, r, &b)) != 0)
        return rc < 0 ? rc : 0;
    return weft__rect_by_rows(WEFT__RECT_H2D, s, q, dst, NULL, NULL, src, &b);
}

int weft__submit_copy_d2h_rect(const weft__submit *s, weft__queue *q, void *dst,
                               weft__mem *src, const weft__rect *r)
{
    weft__rect b;
    int rc;

    if (!s)
        return weft__drv_copy_d2h_rect(q, dst, src, r);
    if (s->copy_d2h_rect)
        return s->copy_d2h_rect(s->self, q, dst, src, r);
    if ((rc = weft__drv_check_copy_d2h_rect(q, dst, src, r, &b)) != 0)
        return rc < 0 ? rc : 0;
    return weft__rect_by_rows(WEFT__RECT_D2H, s, q, NULL, dst, src, NULL, &b);
}

int weft__submit_copy_d2d_rect(const weft__submit *s, weft__queue *q,
                               weft__mem *dst, weft__mem *src,
                               const weft__rect *r)
{
    weft__rect b;
    int rc;

    if (!s)
        return weft__drv_copy_d2d_rect(q, dst, src, r);
    if (s->copy_d2d_rect)
        return s->copy_d2d_rect(s->self, q, dst, src, r);
    if ((rc = weft__drv_check_copy_d2d_rect(q, dst, src, r, &b)) != 0)
        return rc < 0 ? rc : 0;
    return weft__rect_by_rows(WEFT__RECT_D2D, s, q, dst, NULL, src, NULL, &b);
}

int weft__submit_copy_peer_rect(const weft__submit *s, weft__queue *q,
                                weft__mem *dst, weft__mem *src,
                                const weft__rect *r)
{
    weft__rect b;
    int rc;

    if (!s)
        return weft__drv_copy_peer_rect(q, dst, src, r);
    if (s->copy_peer_rect)
        return s->copy_peer_rect(s->self, q, dst, src, r);
    if ((rc = weft__drv_check_copy_peer_rect(q, dst, src, r, &b)) != 0)
        return rc < 0 ? rc : 0;
    return weft__rect_by_rows(WEFT__RECT_PEER, s, q, dst, NULL, src, NULL, &b);
}
