/*
 * What wb.c (write-behind unlink, the grant) and wb_create.c (files
 * created behind, under the same grant) share: the state of one client's
 * write-behind. Not for anyone else.
 */
#ifndef STRIA_CLIENT_WB_INT_H
#define STRIA_CLIENT_WB_INT_H

#include "mdcache.h"
#include "wb.h"

#include <pthread.h>

/* Directories whose last create under a grant is kept (wb_template), by a
 * hash of the directory and MDT, and the distinct layouts they point to
 * (a program writing round the directories of a dataset, which inherit
 * one default, needs one). */
#define WB_TMPLS   512
#define WB_WAYS    4 /* a directory's template is in one set of 4 */
#define WB_LAYOUTS 8
/* Numbers left in the range in use when the next is asked for. */
#define WB_INOS_LOW 256
/* Ranges not used for this long are not used again: the MDT drops a
 * client's ranges nobody changed for 4 hours (meta/store/dlg_rec.h). */
#define WB_RANGE_IDLE_MS (3600 * 1000ll)

/* Slots counting pending unlinks by name (a false match only sends a
 * create the ordinary way). */
#define WB_NAME_SLOTS 256

struct wb_item;

/* The slot of parent's name in wb.unlinking. */
uint32_t wb_name_slot(uint64_t parent, const char *name);

struct wb {
    stria_fs_t *fs;
    wb_removed_fn removed;
    pthread_mutex_t lock;
    pthread_cond_t work; /* the thread waits for items or stop */
    pthread_cond_t done; /* pending fell or room was made */
    struct wb_item *head, *tail;
    uint32_t queued;  /* in the list */
    uint32_t pending; /* in the list or in flight */
    /* Unlinks pending by their name's hash (wb_name_slot): a create
     * behind of a name whose unlink is on its way could reach the MDT
     * first; other names' creates need not wait. */
    uint16_t unlinking[WB_NAME_SLOTS];
    /* Each MDT's grant: held while id > revoked and now < until_ms. */
    struct wb_grant {
        uint32_t pending; /* unlinks for this MDT queued or in flight */
        /* The MDT out of reach: its unlinks wait in the queue until
         * park_until_ms (the sender serves the other MDTs'), and fail
         * once park_deadline_ms (0: reachable) has passed. */
        int64_t park_until_ms, park_deadline_ms;
        int park_delay_ms;
        uint64_t id, revoked;
        int64_t until_ms, backoff_until_ms;
        int64_t lost_ms; /* when its channel last broke: older grants are void */
        /* When this client first heard of grant id: a renewal keeps its id
         * (the MDT gives a new one once another client entered), so the
         * hold is unbroken since then (mdc_exclusive). */
        int64_t since_ms;
        uint64_t room; /* bytes its Data-on-MDT records may still take (WB_ROOM_UNKNOWN) */
        /* Inode numbers of this MDT to create files behind with: the range
         * in use ([0]) and the next ([1]), as the MDT keeps this client's
         * last two (lo 0: none); how many of each were taken. */
        struct wb_range {
            uint64_t lo; /* 0: none */
            uint32_t n, used;
        } rng[2];
        int64_t rng_ms; /* when a range last came or a number was taken */
        bool asking;    /* an OPEN asking for a range is on its way */
        /* An ask had no answer: the MDT may have handed a range this
         * client never heard of, and then keeps only that and the one
         * before it. The next range to come is then the only one used. */
        bool unsure;
    } g[MDC_MAX_MDTS];
    /* What a create in a directory under a grant made (wb_template): the
     * layout is layouts[slot] while that slot's gen is still gen. */
    struct wb_tmpl {
        uint64_t parent, grant, epoch, gen;
        uint64_t used; /* when last made or used (tmpl_clock): the oldest of a set goes */
        uint32_t mdt, slot;
    } tmpl[WB_TMPLS];
    uint64_t tmpl_clock;
    struct wb_layout {
        uint64_t gen; /* 0: empty */
        struct layout l;
    } layouts[WB_LAYOUTS];
    uint64_t layout_gen;
    uint32_t layout_next;
    bool no_create; /* stria_set_create_behind(fs, 0) */
    bool stop;
    pthread_t thread;
    struct wb_stats stats;
    unsigned delay_ms;   /* STRIA_TEST_WB_DELAY_MS: hold each batch back (tests) */
    bool refuse_unlinks; /* STRIA_TEST_WB_REFUSE_UNLINKS: wb_unlink refuses (tests) */
    uint8_t list[PROTO_MAX_REQ_PAYLOAD - 1024]; /* the sender's UNLINKS list */
};

/* Whether this client holds mdt's grant at now (lock held). */
bool wb_held(const struct wb *w, uint32_t mdt, int64_t now);
/* Whether a template is of directory ino (fs->tmpl_dir; wb_create.c). */
bool wb_tmpl_dir(stria_fs_t *fs, uint64_t ino);

#endif
