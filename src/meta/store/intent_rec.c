/*
 * Intent records (intent_rec.h): their encoding in the intents table.
 */
#include "intent_rec.h"

#include "../../proto/proto.h"

#include <errno.h>
#include <string.h>
int meta_intent_encode(const struct meta_intent *x, uint8_t *buf, size_t cap)
{
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    proto_put_U8(&e, &x->kind);
    proto_put_U8(&e, &x->phase);
    proto_put_U64(&e, &x->ino);
    proto_put_U64(&e, &x->dir);
    proto_put_U16(&e, &x->n);
    for (uint16_t i = 0; i < x->n; i++)
        proto_put_U16(&e, &x->mdt[i]);
    /* Operations on names (xname.c) also say which. */
    if (x->kind >= XK_RENAME) {
        struct proto_str nm = proto_str_c(x->name);
        proto_put_U64(&e, &x->ino2);
        proto_put_U8(&e, &x->type);
        proto_put_STR(&e, &nm);
        proto_put_U8(&e, &x->flags);
        proto_put_U16(&e, &x->vfirst);
    } else if (x->kind == XK_SYNC && x->flags) {
        proto_put_U8(&e, &x->flags);
    }
    return e.err ? e.err : (int)e.len;
}

int meta_intent_decode(const void *buf, size_t len, struct meta_intent *x)
{
    struct proto_dec d;
    proto_dec_init(&d, buf, len);
    proto_get_U8(&d, &x->kind);
    proto_get_U8(&d, &x->phase);
    proto_get_U64(&d, &x->ino);
    proto_get_U64(&d, &x->dir);
    proto_get_U16(&d, &x->n);
    if (x->n > X_MAX_MDTS)
        return -EUCLEAN;
    for (uint16_t i = 0; i < x->n; i++)
        proto_get_U16(&d, &x->mdt[i]);
    x->ino2 = 0;
    x->type = 0;
    x->name[0] = '\0';
    x->flags = 0;
    x->vfirst = 0;
    if (x->kind == XK_SYNC && !d.err && d.off < d.len)
        proto_get_U8(&d, &x->flags);
    if (x->kind >= XK_RENAME) {
        struct proto_str nm;
        proto_get_U64(&d, &x->ino2);
        proto_get_U8(&d, &x->type);
        proto_get_STR(&d, &nm);
        if (!d.err && proto_str_copy(&nm, x->name, sizeof(x->name)))
            return -EUCLEAN;
        if (!d.err && d.off < d.len)
            proto_get_U8(&d, &x->flags);
        if (!d.err && d.off < d.len)
            proto_get_U16(&d, &x->vfirst);
        if (x->vfirst > x->n)
            return -EUCLEAN;
    }
    return d.err || x->kind < XK_MKDIR || x->kind > XK_RLOCK ? -EUCLEAN : 0;
}
