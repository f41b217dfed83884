/*
 * libFuzzer target: the metrics responder's reading of an HTTP request's
 * head (net_metrics_request), which any peer that reaches a daemon's
 * metrics port feeds. The input is the bytes received so far, in a buffer
 * of exactly their size, so a read past them is caught. The answer must
 * be one the responder knows, and "more" only while there is room for it.
 */
#include "net/metrics.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * NET_METRICS_REQ_MAX)
        return 0; /* the responder never holds more */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int status = net_metrics_request(buf, size);
    switch (status) {
    case 0:
        if (size >= NET_METRICS_REQ_MAX)
            abort(); /* the responder would wait for bytes it has no room for */
        break;
    case 200:
    case 400:
    case 404:
    case 405:
    case 431:
        break;
    default:
        abort();
    }
    free(buf);
    return 0;
}
