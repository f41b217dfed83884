/*
 * Framing: one message on a socket (docs/protocol.md, "Framing"), shared
 * by the client (client.h) and server (server.h) sides of the transport.
 * A message is a header, its payload and its bulk; the header's lengths
 * are checked (proto_hdr_decode) before anything after it is read.
 *
 * Internal to src/net: the daemons and libstria use net.h.
 */
#ifndef STRIA_NET_FRAME_H
#define STRIA_NET_FRAME_H

#include "../proto/proto.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Send iov[0..n) whole on fd (flags: e.g. MSG_MORE), retrying short
 * sends; iov is consumed. Returns 0 or a negative errno. */
int frame_send_iov(int fd, struct iovec *iov, int n, int flags);
/* Send one message: h (encoded here, with its CRC), h->payload_len bytes
 * of payload and h->bulk_len bytes of bulk. Returns 0 or a negative errno. */
int frame_send(int fd, struct proto_hdr *h, const void *payload, const void *bulk);
/* Send len bytes of file fd from off on sock: by sendfile, straight from
 * the page cache, else through a buffer; bytes the file no longer has go
 * as zeros, so that the stream stays whole. Returns 0 or a negative errno. */
int frame_send_file(int sock, int fd, uint64_t off, uint64_t len);
/* Read one header from fd and check it. Returns 0, -EBADMSG (bad magic or
 * checksum), -EMSGSIZE (a length over its limit) or a read's errno. */
int frame_recv_hdr(int fd, struct proto_hdr *h);
/* Read len bytes from fd before deadline_ns (monotonic): -ETIMEDOUT after
 * it, however the bytes trickle in; -ECONNRESET if the peer closed. */
int frame_read_by(int fd, void *buf, size_t len, int64_t deadline_ns);
/* Read and drop len bytes (a request's bulk that is not wanted). */
int frame_drain(int fd, uint64_t len);

/* SO_RCVTIMEO and SO_SNDTIMEO of fd: a send or receive that makes no
 * progress for ms (0: forever) fails with -EAGAIN. */
int frame_set_timeout(int fd, int ms);
/* The options every connection gets (TCP_NODELAY). */
void frame_tune(int fd);

#endif
