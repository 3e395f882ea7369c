/*
 * Device memory shared between processes (weft_buffer_export,
 * weft_buffer_export_release, weft_ipc_open, weft_ipc_close) on the first
 * device of WEFT_DEVICES. On CUDA a parent exports a range of a buffer and
 * a child process (forked before either makes a runtime: CUDA does not
 * survive a fork) opens the handle, reads the range through a buffer that
 * wraps the mapped address, writes it, and closes it; the parent then
 * declares the write (weft_buffer_mark_device_written) and reads it. The
 * export holds the extent: a range that would widen it fails with
 * WEFT_EBUSY and changes nothing, the buffer cannot be destroyed before the
 * export is released. Other drivers answer WEFT_ENOTSUP and the test is
 * skipped (exit 77): CUDA has IPC, the host, sim and OpenCL drivers not.
 */
#include "wt_test.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { BYTES = 4 << 20, AT = 4096, LEN = 65536 };

static int to_child[2];
static pid_t child;

/* The child: one handle in (or none: stop); its exit status says (0: ok). */
static int child_main(void)
{
    weft_ipc_handle h;
    weft_runtime *rt = NULL;
    const weft_device *dev;
    weft_buffer *w = NULL;
    static uint32_t got[LEN / 4];
    uint64_t addr = 0;
    int bad = 0;

    if (read(to_child[0], &h, sizeof h) != (ssize_t)sizeof h)
        return 0; /* the parent had no CUDA device */
    if (weft_runtime_create(&rt, NULL) < 0 ||
        !(dev = weft_runtime_device(rt, 0)) ||
        weft_ipc_open(rt, dev, &h, &addr) < 0) {
        fprintf(stderr, "child: %s\n", weft_last_error());
        return 1;
    }
    if (weft_buffer_wrap_device(rt, dev, addr, 0, LEN, &w) < 0 ||
        weft_buffer_read(w, 0, got, LEN) < 0) {
        fprintf(stderr, "child: %s\n", weft_last_error());
        return 2;
    }
    for (unsigned k = 0; k < LEN / 4; k++)
        bad += got[k] != AT / 4 + k;
    for (unsigned k = 0; k < LEN / 4; k++)
        got[k] = ~(AT / 4 + k);
    /* destroying the wrapping buffer leaves the final bytes there */
    if (weft_buffer_write(w, 0, got, LEN) < 0 || weft_buffer_destroy(w) < 0 ||
        weft_ipc_close(rt, dev, addr) < 0) {
        fprintf(stderr, "child: %s\n", weft_last_error());
        return 3;
    }
    if (weft_ipc_close(rt, dev, addr) != WEFT_EINVAL) /* closed once */
        bad++;
    if (weft_runtime_destroy(rt) < 0)
        bad++;
    return bad ? 4 : 0;
}

static weft_runtime *rt;
static const weft_device *dev;

static void test_export_to_another_process(void **state)
{
    static uint32_t host[BYTES / 4];
    weft_ipc_handle h;
    weft_device_address a;
    weft_buffer *b;
    uint64_t addr;
    int status = -1;

    (void)state;
    for (unsigned k = 0; k < BYTES / 4; k++)
        host[k] = k;
    check(weft_buffer_create(rt, BYTES, &b));
    check(weft_buffer_write(b, 0, host, BYTES));
    check(weft_buffer_export(b, dev, AT, LEN, WEFT_READ, &h));
    /* the handle is for another process */
    assert_int_equal(weft_ipc_open(rt, dev, &h, &addr), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "this process"));
    /* a range that needs the exported extent widened: refused */
    assert_int_equal(weft_buffer_device_address(b, dev, 0, BYTES, &a),
                     WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "weft_buffer_export"));
    assert_int_equal(weft_buffer_destroy(b), WEFT_EBUSY);

    assert_int_equal(write(to_child[1], &h, sizeof h), (ssize_t)sizeof h);
    assert_int_equal(waitpid(child, &status, 0), child);
    child = 0;
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    check(weft_buffer_mark_device_written(b, dev, AT, LEN));
    check(weft_buffer_read(b, 0, host, BYTES));
    for (unsigned k = 0; k < BYTES / 4; k++) {
        int in = k >= AT / 4 && k < (AT + LEN) / 4;

        if (host[k] != (in ? ~k : k))
            fail_msg("word %u: %#x", k, host[k]);
    }
    check(weft_buffer_export_release(b, dev, AT, LEN));
    assert_int_equal(weft_buffer_export_release(b, dev, AT, LEN), WEFT_ESTATE);
    /* released: the extent may widen again */
    check(weft_buffer_device_address(b, dev, 0, BYTES, &a));
    /* WEFT_WRITE: room only, the bytes stay as they are */
    check(weft_buffer_export(b, dev, AT, LEN, WEFT_WRITE, &h));
    check(weft_buffer_export_release(b, dev, AT, LEN));
    check(weft_buffer_destroy(b));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_to_another_process),
    };
    weft_device_info info = {.size = sizeof info};
    int rc;

    if (pipe(to_child) < 0)
        return 1;
    child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        close(to_child[1]);
        _exit(child_main());
    }
    close(to_child[0]);
    if (weft_runtime_create(&rt, NULL) < 0 ||
        !(dev = weft_runtime_device(rt, 0)) ||
        weft_device_get_info(dev, &info) < 0 || strcmp(info.driver, "cuda")) {
        weft_ipc_handle h;
        weft_buffer *b;

        /* not CUDA: IPC is not supported, and the test is skipped */
        if (dev && weft_buffer_create(rt, 4096, &b) == 0) {
            rc = weft_buffer_export(b, dev, 0, 64, WEFT_READ, &h);
            weft_buffer_destroy(b);
            if (rc != WEFT_ENOTSUP) {
                fprintf(stderr, "weft_buffer_export: %s, not WEFT_ENOTSUP\n",
                        weft_err_name(rc));
                return 1;
            }
        }
        close(to_child[1]);
        waitpid(child, NULL, 0);
        printf("skipped: no CUDA device (%s)\n",
               dev ? info.driver : "no device");
        weft_runtime_destroy(rt);
        return 77;
    }
    rc = wt_run_group(argc, argv, tests, NULL, NULL);
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    check(weft_runtime_destroy(rt));
    return rc;
}
