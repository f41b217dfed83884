/*
 * Namespace operations of one MDT: what the service (and the unit tests)
 * call. Each operation takes the request context (struct meta_req,
 * store.h), a decoded request and the reply to fill; the service's
 * dispatcher only decodes and encodes. Unit tests call them directly on a
 * store in a temporary directory.
 *
 * Every operation checks the caller's credentials (uid, gid, groups) as a
 * local POSIX file system would, and returns 0 or a negative errno.
 *
 * This header only gathers the operations' own headers; no file of ops/
 * includes it.
 */
#ifndef STRIA_META_OPS_OPS_H
#define STRIA_META_OPS_OPS_H

#include "alloc.h"
#include "attrs.h"
#include "create.h"
#include "ctx.h"
#include "dir.h"
#include "dom.h"
#include "hsm.h"
#include "migrate.h"
#include "intent.h"
#include "layout.h"
#include "recover.h"
#include "remove.h"
#include "rename.h"
#include "xattr.h"
#include "xname_step.h"

#endif
