/*
 * Framing (frame.h): one message on a socket, and the socket options
 * every connection gets.
 *
 * A message goes out as one sendmsg of header, payload and bulk (the
 * header encoded with its CRC here); a reply's bulk may come from a file,
 * by sendfile after the header and payload held back with MSG_MORE. A
 * header is read and checked whole before its payload: its lengths are
 * bounded (proto_hdr_decode) before anything is read or allocated.
 * Nothing here knows about requests, handlers or connections: the client
 * and the server sides call down into this file, never it into them.
 */
#include "frame.h"

#include "../common/util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int frame_send_iov(int fd, struct iovec *iov, int n, int flags)
{
    while (n > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int frame_send(int fd, struct proto_hdr *h, const void *payload, const void *bulk)
{
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(h, hb);
    struct iovec iov[3] = {
        {hb, PROTO_HDR_LEN}, {(void *)payload, h->payload_len}, {(void *)bulk, h->bulk_len}};
    return frame_send_iov(fd, iov, 3, 0);
}

/* Send len bytes of file fd from off through a buffer; bytes the file no
 * longer has (cut since) go as zeros, so that the stream stays whole and
 * the reader's checks fail. */
static int send_file_copy(int sock, int fd, uint64_t off, uint64_t len)
{
    uint8_t buf[16384];
    while (len) {
        size_t n = (size_t)MIN(len, sizeof(buf));
        ssize_t r = pread(fd, buf, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0) {
            memset(buf, 0, n);
            r = (ssize_t)n;
        }
        struct iovec iov = {buf, (size_t)r};
        int rc = frame_send_iov(sock, &iov, 1, 0);
        if (rc)
            return rc;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return 0;
}

/* Send len bytes of file fd from off: by sendfile, straight from its page
 * cache, else (the file's end, or a file that cannot be spliced) through
 * send_file_copy. */
int frame_send_file(int sock, int fd, uint64_t off, uint64_t len)
{
    while (len) {
        off_t o = (off_t)off;
        ssize_t w = sendfile(sock, fd, &o, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w == 0 || (w < 0 && (errno == EINVAL || errno == ENOSYS)))
            return send_file_copy(sock, fd, off, len);
        if (w < 0)
            return -errno;
        off += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

int frame_drain(int fd, uint64_t len)
{
    uint8_t buf[8192];
    while (len) {
        size_t n = len > sizeof(buf) ? sizeof(buf) : (size_t)len;
        int rc = util_read_full(fd, buf, n);
        if (rc)
            return rc;
        len -= n;
    }
    return 0;
}

int frame_recv_hdr(int fd, struct proto_hdr *h)
{
    uint8_t hb[PROTO_HDR_LEN];
    int rc = util_read_full(fd, hb, PROTO_HDR_LEN);
    if (rc)
        return rc;
    return proto_hdr_decode(hb, h);
}

/* Read len bytes from fd before deadline_ns (monotonic): -ETIMEDOUT
 * after it, however the bytes trickle in. */
int frame_read_by(int fd, void *buf, size_t len, int64_t deadline_ns)
{
    uint8_t *p = buf;
    while (len > 0) {
        int64_t left_ns = deadline_ns - (int64_t)util_now_mono_ns();
        if (left_ns <= 0)
            return -ETIMEDOUT;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int n = poll(&pf, 1, (int)((left_ns + 999999) / 1000000));
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n <= 0)
            continue;
        ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -errno;
        }
        if (r == 0)
            return -ECONNRESET;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

int frame_set_timeout(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
        return -errno;
    return 0;
}

void frame_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}
