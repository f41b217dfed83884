/*
 * Striped object I/O over a layout (io.c). Never installed.
 *
 * Reads and writes cut by the layout into pieces and sent to the OSTs in
 * parallel, and the small per-object requests (TRUNCATE, DESTROY, OSYNC,
 * PUNCH). Knows layouts and OSTs, nothing of files or handles; asks the
 * MDT only for bytes it keeps (Data-on-MDT) and, when OSTs answer that a
 * migration fenced their objects, for the file's layout now, over which
 * the call is made again (migrate.c). Each returns 0 or a negative errno.
 */
#ifndef STRIA_CLIENT_IO_H
#define STRIA_CLIENT_IO_H

#include "conn.h"

/* The most one request reads or writes (a piece of one stripe unit). */
#define IO_PIECE_MAX (1u << 20)

/* write: buf -> objects; read: objects -> buf, holes zero-filled. */
int io_rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf, size_t len,
          uint64_t off);
/* A file created behind (docs/architecture.md, "Files created behind"):
 * what its create asks the MDT, and the attributes this client said it
 * has. */
struct io_mk {
    uint64_t parent;
    uint32_t mode, flags;
    struct proto_cred cred;
    struct proto_attr said;
    char name[PROTO_MAX_NAME + 1];
};
/* A write that lies inside one piece of a Data-on-MDT component (of
 * file ino, layout l), as io_dom_writes takes it, and its result; with mk,
 * the create of the file first (len may then be 0), and its result in
 * mk_rc. */
struct io_dom_item {
    uint64_t ino;
    const struct layout *l;
    const void *buf;
    uint32_t len;
    uint64_t off;
    int rc;
    const struct io_mk *mk;
    int mk_rc;
};
/* The writes items[0..n) (n at most PROTO_MAX_DOM_WRITES / 2, each inside
 * one piece of its file's Data-on-MDT component on MDT mdt) in one
 * DOM_WRITES request: 0, with each one's result in its rc (one that
 * failed, or does not lie where it should, -EAGAIN, is the caller's to
 * write again with io_rw, which knows what to do about a layout that
 * moved, once its file is made: mk_rc 0); else the request's error, and
 * no item is known written nor file made. */
int io_dom_writes(stria_fs_t *fs, uint32_t mdt, struct io_dom_item *items, uint32_t n);
/* Send one small storage request to each object of the layout: TRUNCATE to
 * the object size that file size `size` implies, DESTROY, or OSYNC. */
enum io_obj_op { IO_TRUNCATE, IO_DESTROY, IO_SYNC };
int io_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
               uint64_t size);
/* One object, as a batched DESTROY names it, and what became of it. */
struct io_obj {
    uint64_t ino;
    uint32_t ost, comp, stripe;
    int rc;
};
/* The objects of file ino of layout l (those io_objects reaches), at most
 * cap of them into v; returns how many there are. */
size_t io_objects_of(uint64_t ino, const struct layout *l, struct io_obj *v, size_t cap);
/* Deallocate a file range on every object it touches. */
int io_punch(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len);

/* The same over exactly l, never over the file's layout now: -ESTALE when
 * l's objects are fenced or its Data-on-MDT component is not the file's
 * (nor its migration's) any more. A migrator's own calls: a layout that
 * moved on under it must stop it, never send its copy elsewhere. */
int io_rw_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf,
             size_t len, uint64_t off);
int io_objects_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                  uint64_t size);
int io_punch_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len);

#endif
