/*
 * Calls for `stria fsck` and `stria scrub` on the storage side: list an OST's
 * objects, look an inode up by number, remove an object no file owns, check
 * the checksums of an OST's objects.
 */
#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define OST_CALL(fs, ost, lname, q, r, use) TARGET_CALL(fs, PROTO_NODE_STOR, ost, lname, q, r, use)

int stria_ost_objects(stria_fs_t *fs, uint32_t ost, uint32_t fan, struct stria_object **out,
                      size_t *n, int *more)
{
    struct proto_listobj_req q = {.ost = ost, .fan = fan};
    struct proto_listobj_rep r;
    *out = NULL;
    *n = 0;
    *more = 0;
    int drc = 0;
    int rc = OST_CALL(fs, ost, listobj, &q, &r, ({
                          size_t count = r.objects.len / 16;
                          struct stria_object *v = calloc(count ? count : 1, sizeof(*v));
                          struct proto_dec d;
                          proto_dec_init(&d, r.objects.p, r.objects.len);
                          for (size_t i = 0; v && i < count; i++) {
                              proto_get_U64(&d, &v[i].ino);
                              proto_get_U32(&d, &v[i].comp);
                              proto_get_U32(&d, &v[i].stripe);
                          }
                          drc = !v ? -ENOMEM : d.err ? -EPROTO : 0;
                          if (drc)
                              free(v);
                          else {
                              *out = v;
                              *n = count;
                              *more = r.more;
                          }
                      }));
    return rc ? rc : drc;
}

int stria_ost_destroy(stria_fs_t *fs, uint32_t ost, const struct stria_object *o)
{
    struct proto_destroy_req q = {.ost = ost, .ino = o->ino, .comp = o->comp, .stripe = o->stripe};
    struct proto_destroy_rep r;
    return OST_CALL(fs, ost, destroy, &q, &r, (void)0);
}

int stria_ost_scrub(stria_fs_t *fs, uint32_t ost, uint32_t fan, struct stria_scrub_report *out)
{
    struct proto_scrub_req q = {.ost = ost, .fan = fan};
    struct proto_scrub_rep r;
    memset(out, 0, sizeof(*out));
    int drc = 0;
    cl_long_call = true; /* one fan-out directory of a large OST takes long */
    int rc = OST_CALL(fs, ost, scrub, &q, &r, ({
                          size_t count = r.bad.len / 24;
                          out->objects = r.objects;
                          out->blocks = r.blocks;
                          out->bytes = r.bytes;
                          out->bad_blocks = r.bad_blocks;
                          if (count && !(out->bad = calloc(count, sizeof(*out->bad))))
                              drc = -ENOMEM;
                          for (size_t i = 0; out->bad && i < count; i++) {
                              const uint8_t *e = r.bad.p + 24 * i;
                              out->bad[i].obj.ino = proto_le64(e);
                              out->bad[i].obj.comp = proto_le32(e + 8);
                              out->bad[i].obj.stripe = proto_le32(e + 12);
                              out->bad[i].offset = proto_le64(e + 16);
                          }
                          out->nbad = out->bad ? count : 0;
                      }));
    cl_long_call = false;
    return rc ? rc : drc;
}

int stria_stat_ino(stria_fs_t *fs, uint64_t ino, struct stat *st)
{
    struct proto_attr a;
    int rc = cl_getattr(fs, ino, &a);
    if (rc == 0)
        cl_to_stat(&a, st);
    return rc;
}
