/* The smallest program built against an installed weft. */
#include <weft.h>

#include <stdio.h>

int main(void)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt;
    int rc;

    o.devices = "sim";
    rc = weft_runtime_create(&rt, &o);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", weft_err_name(rc), weft_last_error());
        return 1;
    }
    printf("weft consumer ok: version %s, %u devices\n", weft_version(),
           weft_runtime_device_count(rt));
    return weft_runtime_destroy(rt) < 0;
}
