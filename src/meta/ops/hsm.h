/*
 * Data repositories on S3, the MDT's side: a file's HSM state (HSM_GET,
 * HSM_SET), the import of an S3 object as a released file (HSM_IMPORT),
 * the file system's list of repositories (REPO, MDT 0 only) and the
 * tombstones of archived files destroyed here (HSM_GONE). Each
 * operation takes the request context (store.h), the decoded request and
 * the reply to fill, and returns 0 or a negative errno; proto.h's comments
 * on the messages are their contract.
 */
#ifndef STRIA_META_OPS_HSM_H
#define STRIA_META_OPS_HSM_H

#include "core.h"

/* The reply's key and etag point into rq->buf (META_HSM_BUF bytes). */
#define META_HSM_BUF (PROTO_MAX_S3_KEY + 512)
int meta_op_hsm_get(const struct meta_req *rq, const void *q, void *r);
int meta_op_hsm_set(const struct meta_req *rq, const void *q, void *r);
int meta_op_hsm_import(const struct meta_req *rq, const void *q, void *r);
/* LIST and GET: the reply's repos points into rq->buf (META_REPO_BUF). */
#define META_REPO_BUF (PROTO_MAX_REP_PAYLOAD - 64)
int meta_op_repo(const struct meta_req *rq, const void *q, void *r);
/* HSM_GONE (hsm_rec.h's tombstones): LIST's entries point into rq->buf
 * (META_GONE_BUF bytes). */
#define META_GONE_BUF (PROTO_MAX_REP_PAYLOAD - 64)
int meta_op_hsm_gone(const struct meta_req *rq, const void *q, void *r);
/* HSM_REAP: the files HSM_IMPORT superseded (proto.h). */
int meta_op_hsm_reap(const struct meta_req *rq, const void *q, void *r);

#endif
