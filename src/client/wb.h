/*
 * Write-behind unlink (docs/architecture.md, "Write-behind unlink"). Never
 * installed.
 *
 * While this client holds the write-behind grant of the MDT holding a name
 * (each MDT grants its own), an unlink the cache can decide alone (the name and its inode are
 * leased, the inode is a file with one link that nobody here has open) is acknowledged at once and
 * sent later, in order, by one thread that keeps up to WB_BATCH requests in flight on its
 * connection. The MDT revokes the grant before it runs any other client's request and waits for
 * this client to send everything it queued, so no one else ever sees the name before the unlink.
 * Every other metadata request of this client waits for the queue to empty first (MDT_CALL), so
 * this client's own operations stay in order.
 *
 * The price: an acknowledged unlink that was still queued is lost if the
 * client dies (the file stays), as with CephFS's asynchronous unlink; fsync
 * on the directory waits until the queue is empty.
 *
 * Built on the transport core, the metadata cache and the inode calls;
 * wb_start registers wb_flush as the core's before_mdt_call hook and
 * wb_revoked as the cache's revocation callback.
 */
#ifndef STRIA_CLIENT_WB_H
#define STRIA_CLIENT_WB_H

#include "conn.h"

#include <stdbool.h>
#include <stdint.h>

struct stria_removed;

/* What the caller does once the MDT removed a file's last link (destroy
 * its objects now, or at its last close). */
typedef void (*wb_removed_fn)(stria_fs_t *fs, struct stria_removed *rm);

/* Start write-behind for fs (fs->wb); the mount does, with its cache. */
int wb_start(stria_fs_t *fs, wb_removed_fn removed);
/* Send what is queued and stop the thread; nothing more is queued. */
void wb_stop(stria_fs_t *fs);
/* Free it (after wb_stop, once the revocation channel is stopped too);
 * fs->wb becomes NULL. */
void wb_destroy(stria_fs_t *fs);

/* The number of mdt's grant while this client holds it, else 0. */
uint64_t wb_grant_id(stria_fs_t *fs, uint32_t mdt);
/* Count an unlink of name in parent as pending from now on (a create of
 * that name waits for it, wb_create_begin), before the name leaves the
 * cache: returns what wb_unlink takes. */
uint32_t wb_unlink_hold(stria_fs_t *fs, uint64_t parent, const char *name);
/* Queue the unlink of name in parent, held by MDT mdt, on behalf of cred,
 * counted by wb_unlink_hold (slot): 0 (the queue takes the count over),
 * or -EAGAIN when mdt's grant is not held or is no longer grant id, under
 * which the caller decided: another client may have changed the name
 * between two grants. Then the caller unlinks the ordinary way and lets
 * the count go after it (wb_unlink_unhold): a create behind of the name
 * would otherwise overtake that unlink. Waits while the queue is full. */
int wb_unlink(stria_fs_t *fs, uint64_t parent, uint32_t mdt, const char *name,
              const struct proto_cred *cred, uint64_t id, uint32_t slot);
/* Let go of a count wb_unlink refused to take over. */
void wb_unlink_unhold(stria_fs_t *fs, uint32_t slot);
/* Return once everything queued so far has been answered by the MDTs. */
void wb_flush(stria_fs_t *fs);
/* Whether a request sent to mdt should ask for its grant: when not held
 * and not just lost, or, if renew, when held (an open that creates a file
 * renews it, which says the grant the file is made under). */
bool wb_want(stria_fs_t *fs, uint32_t mdt, bool renew);
/* A reply of mdt granted (or renewed) grant id for ms, counted from
 * sent_ms; room: what mdt's Data-on-MDT records could still take then
 * (OPEN's reply says), or WB_ROOM_UNKNOWN. */
#define WB_ROOM_UNKNOWN UINT64_MAX
void wb_granted(stria_fs_t *fs, uint32_t mdt, uint64_t id, uint32_t ms, int64_t sent_ms,
                uint64_t room);

/* Data-on-MDT bytes written behind (docs/architecture.md, "Small files
 * written behind"). wb_behind_begin: whether a write ending at end (what
 * it may grow the file's record to: its bound of growth) into a file made
 * under grant id of mdt may be written behind now (that grant still held,
 * its room enough); when true, the caller queues it (gather_behind) and
 * then calls wb_behind_end, and nothing may revoke the grant in between. */
bool wb_behind_begin(stria_fs_t *fs, uint32_t mdt, uint64_t id, uint64_t end);
void wb_behind_end(stria_fs_t *fs);
/* This client is writing into mdt's Data-on-MDT records, growing a record
 * by at most len bytes: less room for bytes written behind. */
void wb_dom_used(stria_fs_t *fs, uint32_t mdt, uint64_t len);
/* While on, this thread's MDT calls do not wait for the bytes written
 * behind (an open that creates a name known to be new cannot see them);
 * queued unlinks they still wait for. */
void wb_pass_behind(bool on);
/* MDT mdt revoked grant id (0: its channel broke, whatever it granted or
 * has on its way is void): stop queuing for it and return once the queue
 * is empty. */
void wb_revoked(stria_fs_t *fs, uint32_t mdt, uint64_t id);

/* Files created behind (docs/architecture.md, "Files created behind").
 * wb_want_inos: PROTO_OPEN_WANT_INOS when a create's OPEN to mdt should
 * ask for a range of inode numbers (this client has fewer than
 * WB_INOS_LOW left and none on its way, or its ranges are in doubt: an ask
 * lost its answer, or they were not used for WB_RANGE_IDLE_MS), else 0; once it said so, the
 * caller must call wb_inos with what the reply brought (0, 0: none, or no
 * reply). wb_template: a create in parent on mdt made under grant, sent at
 * fs->ns_epoch epoch, gave the new file layout l (with no component on an
 * OST yet). wb_create_begin: whether a new file in parent may be created
 * behind now (the grant that template was made under is still held,
 * nothing of this client changed any name or attribute since, no unlink of
 * name is on its way, a number is left): when true, its number, layout and grant are set, and the
 * caller queues its create (gather_create) and then calls wb_behind_end, nothing revoking the grant
 * in between. wb_create_count: a file was created behind (MADE), one's create failed after it was
 * sent (FAILED), or the MDT made one otherwise than this client said (DIFFERED). An OPEN that asks
 * for a range waits for every create queued before it (the MDT then
 * forgets the oldest range it kept). */
uint8_t wb_want_inos(stria_fs_t *fs, uint32_t mdt);
void wb_inos(stria_fs_t *fs, uint32_t mdt, uint64_t lo, uint32_t n);
void wb_template(stria_fs_t *fs, uint32_t mdt, uint64_t parent, uint64_t grant, uint64_t epoch,
                 const struct layout *l);
bool wb_create_begin(stria_fs_t *fs, uint32_t mdt, uint64_t parent, const char *name, uint64_t *ino,
                     struct layout *l, uint64_t *grant);
enum wb_create_what { WB_CREATE_MADE, WB_CREATE_FAILED, WB_CREATE_DIFFERED };
void wb_create_count(stria_fs_t *fs, enum wb_create_what what);
/* Turn creating behind on or off (on by default with write-behind). */
void wb_set_create(stria_fs_t *fs, bool on);

/* What this client's write-behind did since it started. */
struct wb_stats {
    uint64_t created;         /* files created behind */
    uint64_t create_failed;   /* of those, refused by the MDT or lost */
    uint64_t create_differed; /* of those, made with other attributes than said */
    uint64_t queued;          /* unlinks acknowledged before they were sent */
    uint64_t sent;            /* of those, answered by the MDT (failures included) */
    uint64_t failed;          /* of those, refused by the MDT or lost with a connection */
    uint64_t grants;          /* grants received (renewals not counted) */
    uint64_t batched;         /* sent several to a request (UNLINKS) */
    uint64_t batches;         /* the UNLINKS requests that carried them */
};
void wb_get_stats(stria_fs_t *fs, struct wb_stats *out);

#endif
