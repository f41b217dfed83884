/*
 * How one MDT serves its requests (dispatch.c): one table of operations
 * and one generic handler over it.
 */
#ifndef STRIA_META_DISPATCH_H
#define STRIA_META_DISPATCH_H

#include "../../net/net.h"

/* Put every request kind this MDT serves into so's handlers (and which
 * are changes kept for resends into so->cached), with the hooks leases
 * need (on_enter, on_leave, on_close). so->ctx must be the MDT's struct
 * mdt_service (mdt.h). */
void meta_dispatch_install(struct net_server_opts *so);

#endif
