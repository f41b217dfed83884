/*
 * libFuzzer target: the MDT's record decoders that read bytes from another
 * MDT or from disk: an inode record (SHARD carries one between MDTs), an
 * intent record (read back at recovery), a file's HSM record and a
 * tombstone. The first input byte picks the decoder (0 inode, 1 intent,
 * 2 HSM, 3 tombstone). Anything a decoder accepts must re-encode, and
 * decode again to the same record.
 */
#include "meta/store/hsm_rec.h"
#include "meta/store/intent_rec.h"
#include "meta/store/store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void inode(const uint8_t *p, size_t n)
{
    static struct meta_inode a, b;
    static uint8_t buf[META_INODE_REC_MAX];
    if (meta_inode_decode(p, n, &a))
        return;
    int len = meta_inode_encode(&a, buf, sizeof(buf));
    if (len < 0 || meta_inode_decode(buf, (size_t)len, &b) || a.ino != b.ino || a.mode != b.mode ||
        a.nlink != b.nlink || a.dstripe != b.dstripe || a.layout.ncomp != b.layout.ncomp)
        abort();
}

static void intent(const uint8_t *p, size_t n)
{
    static struct meta_intent a, b;
    static uint8_t buf[64 + 2 * X_MAX_MDTS + PROTO_MAX_NAME];
    if (meta_intent_decode(p, n, &a))
        return;
    int len = meta_intent_encode(&a, buf, sizeof(buf));
    if (len < 0 || meta_intent_decode(buf, (size_t)len, &b) || a.kind != b.kind || a.n != b.n ||
        a.ino != b.ino || a.flags != b.flags || strcmp(a.name, b.name))
        abort();
}

static void hsm(const uint8_t *p, size_t n)
{
    static struct meta_hsm a, b;
    static uint8_t buf[META_HSM_REC_MAX];
    if (meta_hsm_decode(p, n, &a))
        return;
    int len = meta_hsm_encode(&a, buf, sizeof(buf));
    if (len < 0 || meta_hsm_decode(buf, (size_t)len, &b) || a.state != b.state ||
        a.repo != b.repo || a.size != b.size || a.gen != b.gen || strcmp(a.key, b.key) ||
        strcmp(a.etag, b.etag))
        abort();
}

static void gone(const uint8_t *p, size_t n)
{
    static struct meta_gone a, b;
    static uint8_t buf[META_GONE_REC_MAX];
    if (meta_gone_decode(p, n, &a))
        return;
    int len = meta_gone_encode(&a, buf, sizeof(buf));
    if (len < 0 || meta_gone_decode(buf, (size_t)len, &b) || a.repo != b.repo ||
        strcmp(a.key, b.key) || strcmp(a.etag, b.etag))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0:
        inode(data + 1, size - 1);
        break;
    case 1:
        intent(data + 1, size - 1);
        break;
    case 2:
        hsm(data + 1, size - 1);
        break;
    default:
        gone(data + 1, size - 1);
    }
    return 0;
}
