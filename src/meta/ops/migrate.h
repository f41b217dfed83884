/*
 * Online migration's MDT side (proto.h's MIGRATE; docs/architecture.md,
 * "Migration"): the migration record of a file (store/mig_rec.h) and the
 * atomic swap of its layout. The copy, the fences and the destruction of
 * objects are the migrating client's (src/client/migrate.c).
 */
#ifndef STRIA_META_OPS_MIGRATE_H
#define STRIA_META_OPS_MIGRATE_H

#include "core.h"

int meta_op_migrate(const struct meta_req *rq, const void *q, void *r);

#endif
