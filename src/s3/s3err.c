/*
 * The one-line reasons of S3 failures (s3int.h), apart from the requests
 * so that every part of the client can fill one without calling up.
 */
#include "s3/s3int.h"

#include <stdarg.h>
#include <stdio.h>

void s3_errf(struct s3_err *err, const char *fmt, ...)
{
    va_list ap;
    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    /* One line: a control character in S3's message must not break it. */
    for (char *p = err->text; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
}
