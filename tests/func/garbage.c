/*
 * Bad input to every daemon, then normal work that must still succeed.
 *
 * For each of mgmtd, metad and stord: random bytes instead of a handshake;
 * a truncated header; a wrong cluster key; after a good handshake a header
 * with a bad checksum, a payload length far above the maximum, an unknown
 * opcode, and a well-framed request whose payload is garbage. Each must end
 * in an error reply or a closed connection, never a crash, and a request on
 * a fresh connection afterwards must be answered. Then a file is written
 * and read back through libstria.
 *
 * With SLOW_PORT, HANDSHAKE_MS and MAX_CONNS (a daemon started with those
 * handshake_timeout_ms and max_connections): peers that never
 * authenticate but send one byte every HANDSHAKE_MS / 4 are closed by the
 * handshake's deadline, and while MAX_CONNS of them hold every slot a real
 * client still gets in and is answered.
 *
 * Usage: garbage HOST MGMT_PORT META_PORT STOR_PORT CLIENT_CONF KEY_FILE
 *                [SLOW_PORT HANDSHAKE_MS MAX_CONNS]
 */
#include "common/auth.h"
#include "net/net.h"
#include "proto/csum.h"
#include "proto/ids.h"
#include "stria/stria.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const char *host;
static struct auth_key key, bad_key;

/* Wait (at most 10 s) for the server to close fd; true if it did. */
static bool closed_by_peer(int fd)
{
    char buf[4096];
    for (int i = 0; i < 100; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return true;
    }
    return false;
}

static void raw_garbage(const char *name, uint16_t port)
{
    uint8_t junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(rand() & 0xff);
    int fd = net_tcp_connect(host, port, 2000);
    CHECK(fd >= 0, "%s: connect: %s", name, strerror(-fd));
    if (fd < 0)
        return;
    ssize_t w = write(fd, junk, sizeof(junk));
    (void)w;
    CHECK(closed_by_peer(fd), "%s: garbage did not close the connection", name);
    close(fd);

    /* Half a header, then hang up. */
    fd = net_tcp_connect(host, port, 2000);
    if (fd >= 0) {
        w = write(fd, "STRA\x01\x00", 6);
        close(fd);
    }
}

static void wrong_key(const char *name, uint16_t port)
{
    struct net_conn *c = NULL;
    int rc = net_connect(host, port, &bad_key, 42, "intruder", 3000, &c);
    CHECK(rc == -EACCES, "%s: wrong key gave %d, want -EACCES", name, rc);
    net_close(c);
}

/* Send a raw header (and payload) on an authenticated connection. */
static int send_raw(struct net_conn *c, struct proto_hdr *h, const void *payload)
{
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(h, hb);
    if (write(c->fd, hb, sizeof(hb)) != (ssize_t)sizeof(hb))
        return -EIO;
    if (h->payload_len && payload && write(c->fd, payload, h->payload_len) < 0)
        return -EIO;
    return 0;
}

static struct proto_hdr hdr(uint16_t op, uint32_t plen, uint64_t reqid)
{
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = op,
                          .reqid = reqid,
                          .payload_len = plen};
    return h;
}

static void after_auth(const char *name, uint16_t port, uint16_t real_op)
{
    struct net_conn *c = NULL;
    int rc = net_connect(host, port, &key, 7, "tester", 3000, &c);
    CHECK(rc == 0, "%s: good key refused: %d", name, rc);
    if (rc)
        return;
    bool transport = false;

    /* Unknown opcode: an error reply, and the connection keeps working. */
    struct proto_hdr h = hdr(99, 0, 1000);
    send_raw(c, &h, NULL);
    rc = net_recv(c, 1000, NULL, 0, NULL, &transport);
    CHECK(rc == -EOPNOTSUPP && !transport, "%s: unknown opcode gave %d", name, rc);

    /* A known opcode with a garbage payload: -EBADMSG (or a semantic error). */
    uint8_t junk[64];
    memset(junk, 0xee, sizeof(junk));
    h = hdr(real_op, sizeof(junk), 1001);
    send_raw(c, &h, junk);
    rc = net_recv(c, 1001, NULL, 0, NULL, &transport);
    CHECK(rc < 0 && !transport, "%s: garbage payload gave %d transport=%d", name, rc, transport);
    struct proto_ping_req pq = {0};
    struct proto_ping_rep pr;
    rc = net_call_ping(c, &pq, &pr, NULL, 0, NULL, 0, NULL, &transport);
    CHECK(rc == 0, "%s: ping after a bad payload: %d", name, rc);

    /* A payload length far above the maximum: the server hangs up. */
    h = hdr(real_op, 100u << 20, 1002);
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(&h, hb);
    /* proto_hdr_encode does not check lengths; the server must. */
    ssize_t w = write(c->fd, hb, sizeof(hb));
    (void)w;
    CHECK(closed_by_peer(c->fd), "%s: oversized payload did not close the connection", name);
    net_close(c);

    /* A header with a flipped byte (bad checksum): the server hangs up. */
    rc = net_connect(host, port, &key, 8, "tester", 3000, &c);
    CHECK(rc == 0, "%s: reconnect: %d", name, rc);
    if (rc)
        return;
    h = hdr(PROTO_OP_PING, 0, 1003);
    proto_hdr_encode(&h, hb);
    hb[20] ^= 0x40;
    w = write(c->fd, hb, sizeof(hb));
    CHECK(closed_by_peer(c->fd), "%s: bad checksum did not close the connection", name);
    net_close(c);

    /* And the daemon still serves a newcomer. */
    rc = net_connect(host, port, &key, 9, "tester", 3000, &c);
    CHECK(rc == 0, "%s: connect after abuse: %d", name, rc);
    if (rc == 0) {
        rc = net_call_ping(c, &pq, &pr, NULL, 0, NULL, 0, NULL, &transport);
        CHECK(rc == 0, "%s: ping after abuse: %d", name, rc);
        net_close(c);
    }
}

/* A WRITE whose data does not match its checksums: EIO, and nothing of it
 * lands; WRITE without checksums: EBADMSG. The same write with the right
 * ones then lands and reads back. */
static void wire_checksums(uint16_t port)
{
    struct net_conn *c = NULL;
    int rc = net_connect(host, port, &key, 10, "tester", 3000, &c);
    CHECK(rc == 0, "stord: connect: %d", rc);
    if (rc)
        return;
    uint8_t data[70000], crcs[16], back[70000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13);
    uint64_t off = 1000;
    proto_csum_fill(off, data, sizeof(data), crcs);
    struct proto_write_req w = {.ost = 0, .ino = 0x7777, .offset = off, .crcs = {crcs, 12}};
    struct proto_write_rep wr;
    bool tr = false;
    data[40000] ^= 1; /* changed after the checksums were taken */
    rc = net_call_write(c, &w, &wr, data, sizeof(data), NULL, 0, NULL, &tr);
    CHECK(rc == -EIO && !tr, "stord: a write with a wrong checksum gave %d", rc);
    w.crcs.len = 0;
    rc = net_call_write(c, &w, &wr, data, sizeof(data), NULL, 0, NULL, &tr);
    CHECK(rc == -EBADMSG && !tr, "stord: a write without checksums gave %d", rc);
    struct proto_read_req rq = {.ost = 0, .ino = 0x7777, .offset = off, .len = sizeof(back)};
    struct proto_read_rep rr;
    uint32_t got = 1;
    rc = net_call_read(c, &rq, &rr, NULL, 0, back, sizeof(back), &got, &tr);
    CHECK(rc == 0 && got == 0, "stord: a refused write left data: rc %d, %u bytes", rc, got);
    data[40000] ^= 1;
    w.crcs.len = 12;
    rc = net_call_write(c, &w, &wr, data, sizeof(data), NULL, 0, NULL, &tr);
    CHECK(rc == 0, "stord: a good write gave %d", rc);
    rc = net_call_read(c, &rq, &rr, NULL, 0, back, sizeof(back), &got, &tr);
    CHECK(rc == 0 && got == sizeof(back) && !memcmp(back, data, got) &&
              proto_csum_check(off, back, got, &rr.crcs, &rr.alt, NULL) == 0,
          "stord: read back: rc %d, %u bytes", rc, got);
    /* The largest READ there is, read and checked by the OST: short at the
     * object's end. */
    uint8_t *big = malloc(PROTO_MAX_BULK);
    rq.len = PROTO_MAX_BULK;
    rq.flags = PROTO_READ_CHECKED;
    rc = big ? net_call_read(c, &rq, &rr, NULL, 0, big, PROTO_MAX_BULK, &got, &tr) : -ENOMEM;
    CHECK(rc == 0 && got == sizeof(data) && !memcmp(big, data, got) && rr.alt.len == 0 &&
              proto_csum_check(off, big, got, &rr.crcs, &rr.alt, NULL) == 0,
          "stord: a checked read of %u bytes: rc %d, %u bytes, alt %u", PROTO_MAX_BULK, rc, got,
          rr.alt.len);
    /* Whole blocks: sent from the cache unread, with both CRCs of each. */
    rq.offset = 0;
    rq.len = 2 * PROTO_CSUM_BLOCK;
    rq.flags = 0;
    rc = big ? net_call_read(c, &rq, &rr, NULL, 0, big, PROTO_MAX_BULK, &got, &tr) : -ENOMEM;
    CHECK(rc == 0 && got == rq.len && !memcmp(big + off, data, got - off) && rr.alt.len == 8 &&
              proto_csum_check(0, big, got, &rr.crcs, &rr.alt, NULL) == 0,
          "stord: a read of whole blocks: rc %d, %u bytes, alt %u", rc, got, rr.alt.len);
    free(big);
    /* A DESTROY whose list of further objects is malformed removes
     * nothing: a list of a wrong length, or of PROTO_MAX_DESTROY more. */
    uint8_t more[PROTO_DESTROY_ENTRY * PROTO_MAX_DESTROY] = {0};
    struct proto_destroy_req dq = {.ost = 0, .ino = 0x7777, .more = {more, 15}};
    struct proto_destroy_rep dr;
    rc = net_call_destroy(c, &dq, &dr, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "stord: a DESTROY with a 15-byte list gave %d", rc);
    dq.more.len = sizeof(more);
    rc = net_call_destroy(c, &dq, &dr, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "stord: a DESTROY of %d objects gave %d", PROTO_MAX_DESTROY + 1,
          rc);
    rq.offset = off;
    rq.len = sizeof(back);
    rc = net_call_read(c, &rq, &rr, NULL, 0, back, sizeof(back), &got, &tr);
    CHECK(rc == 0 && got == sizeof(back), "stord: refused DESTROYs removed the object: rc %d, %u",
          rc, got);
    /* One DESTROY removes the objects it lists, the first among them, and
     * an object already gone is no error. */
    w.ino = 0x8888;
    rc = net_call_write(c, &w, &wr, data, sizeof(data), NULL, 0, NULL, &tr);
    CHECK(rc == 0, "stord: a write of a second object gave %d", rc);
    dq = (struct proto_destroy_req){
        .ost = 0, .ino = 0x7777, .more = {more, 2 * PROTO_DESTROY_ENTRY}};
    proto_put_le64(more, 0x9999); /* never written */
    proto_put_le64(more + PROTO_DESTROY_ENTRY, 0x8888);
    rc = net_call_destroy(c, &dq, &dr, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == 0, "stord: a DESTROY of three objects gave %d", rc);
    for (uint64_t ino = 0x7777; ino <= 0x8888; ino += 0x1111) {
        rq.ino = ino;
        got = 1;
        rc = net_call_read(c, &rq, &rr, NULL, 0, back, sizeof(back), &got, &tr);
        CHECK(rc == 0 && got == 0, "stord: object %" PRIx64 " after its DESTROY: rc %d, %u bytes",
              ino, rc, got);
    }
    net_close(c);
}

/* A client of conf that has created files[0..n), and a raw connection to
 * metad's port: 0, or (each failure said) an error, with nothing left open. */
static int client_and_conn(uint16_t port, const char *conf, const char *const *files, int n,
                           stria_fs_t **fs, struct net_conn **c)
{
    int rc = stria_connect(conf, fs);
    CHECK(rc == 0, "connect: %d", rc);
    if (rc)
        return rc;
    stria_file_t *f;
    for (int i = 0; i < n; i++) {
        rc = stria_open(*fs, files[i], O_RDWR | O_CREAT, 0644, &f);
        CHECK(rc == 0, "create %s: %d", files[i], rc);
        if (rc == 0)
            stria_close(f);
    }
    *c = NULL;
    rc = net_connect(host, port, &key, 10, "tester", 3000, c);
    CHECK(rc == 0, "metad: connect: %d", rc);
    if (rc)
        stria_disconnect(*fs);
    return rc;
}

/* Send the UNLINKS of items it[0..n) on c: its status, and each item's
 * status and reply in st[] and ur[]. */
static int unlinks_call(struct net_conn *c, const struct proto_unlinks_item *it, int n, int *st,
                        struct proto_unlink_rep *ur)
{
    static uint8_t list[4096];
    struct proto_enc e;
    proto_enc_init(&e, list, sizeof(list));
    for (int i = 0; i < n; i++)
        proto_unlinks_item_put(&e, &it[i]);
    struct proto_unlinks_req q = {.cred = {0}, .items = {list, (uint32_t)e.len}};
    struct proto_unlinks_rep r;
    bool tr = false;
    int rc = net_call_unlinks(c, &q, &r, NULL, 0, NULL, 0, NULL, &tr);
    struct proto_dec d;
    proto_dec_init(&d, r.results.p, rc ? 0 : r.results.len);
    for (int i = 0; rc == 0 && i < n; i++) {
        struct proto_blob one;
        struct proto_dec od;
        memset(&ur[i], 0, sizeof(ur[i]));
        if (proto_result_get(&d, &st[i], &one))
            return -EBADMSG;
        proto_dec_init(&od, one.p, one.len);
        if (st[i] == 0 && proto_dec_unlink_rep(&od, &ur[i]))
            return -EBADMSG;
    }
    return rc;
}

/* UNLINKS items and the reply cache: an item whose slot already holds a
 * reply (the unlink sent alone first) is answered from it, not made again
 * (which would say ENOENT); an item sent again alone after its UNLINKS is
 * answered from the reply the UNLINKS kept; two items of one slot are
 * refused. */
static void unlinks_slots(stria_fs_t *fs, struct net_conn *c)
{
    stria_file_t *f;
    for (int i = 2; i < 7; i++) {
        char name[8];
        snprintf(name, sizeof(name), "/u%d", i);
        int rc = stria_open(fs, name, O_RDWR | O_CREAT, 0644, &f);
        CHECK(rc == 0, "create %s: %d", name, rc);
        if (rc == 0)
            stria_close(f);
    }
    uint64_t s2 = net_next_seq(), s3 = net_next_seq(), s4 = net_next_seq();
    struct proto_unlink_req uq = {.cred = {0}, .parent = PROTO_ROOT_INO, .path = proto_str_c("u2")};
    struct proto_unlink_rep one;
    bool tr = false;
    c->seq = s2;
    c->tag = 1;
    int rc = net_call_unlink(c, &uq, &one, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == 0 && one.gone, "metad: an UNLINK of /u2 gave %d", rc);
    struct proto_unlinks_item it[2] = {{PROTO_ROOT_INO, s2, 1, proto_str_c("u2")},
                                       {PROTO_ROOT_INO, s3, 2, proto_str_c("u3")}};
    int st[2] = {1, 1};
    struct proto_unlink_rep ur[2];
    rc = unlinks_call(c, it, 2, st, ur);
    CHECK(rc == 0 && st[0] == 0 && ur[0].gone && ur[0].ino == one.ino,
          "metad: an UNLINKS item whose UNLINK was made: rc %d, status %d, ino %" PRIu64
          " (want 0, 0, %" PRIu64 ")",
          rc, st[0], ur[0].ino, one.ino);
    CHECK(rc == 0 && st[1] == 0 && ur[1].gone, "metad: UNLINKS of /u3: rc %d, status %d", rc,
          st[1]);
    uq.path = proto_str_c("u3");
    c->seq = s3;
    c->tag = 2;
    c->resend = true;
    rc = net_call_unlink(c, &uq, &one, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == 0 && one.gone && one.ino == ur[1].ino,
          "metad: the UNLINK of an UNLINKS item sent again gave %d", rc);
    it[0] = (struct proto_unlinks_item){PROTO_ROOT_INO, s4, 3, proto_str_c("u4")};
    it[1] = it[0];
    rc = unlinks_call(c, it, 2, st, ur);
    struct stat sb;
    CHECK(rc == -EINVAL && stria_stat(fs, "/u4", &sb) == 0,
          "metad: an UNLINKS naming one slot twice gave %d", rc);
    it[1].seq = net_next_seq();
    it[1].tag = 4;
    rc = unlinks_call(c, it, 2, st, ur);
    CHECK(rc == 0 && st[0] == 0 && st[1] == -ENOENT && stria_stat(fs, "/u4", &sb) == -ENOENT,
          "metad: an UNLINKS of /u4 twice gave %d, %d, %d", rc, st[0], st[1]);
    /* An item with a slot beside one without (tag 0). */
    it[0] = (struct proto_unlinks_item){PROTO_ROOT_INO, net_next_seq(), 5, proto_str_c("u5")};
    it[1] = (struct proto_unlinks_item){PROTO_ROOT_INO, 0, 0, proto_str_c("u6")};
    rc = unlinks_call(c, it, 2, st, ur);
    CHECK(rc == 0 && st[0] == 0 && st[1] == 0 && stria_stat(fs, "/u5", &sb) == -ENOENT &&
              stria_stat(fs, "/u6", &sb) == -ENOENT,
          "metad: an UNLINKS of an item with a slot and one without gave %d, %d, %d", rc, st[0],
          st[1]);
}

/* UNLINKS (metad): a list that does not parse, an empty one and one of
 * PROTO_MAX_UNLINKS + 1 items are refused with nothing removed; a good
 * one answers each item on its own, the names that exist removed. */
static void bad_unlinks(uint16_t port, const char *conf)
{
    stria_fs_t *fs;
    struct net_conn *c;
    const char *files[] = {"/u0", "/u1"};
    int rc = client_and_conn(port, conf, files, 2, &fs, &c);
    if (rc)
        return;
    static uint8_t list[PROTO_MAX_REQ_PAYLOAD - 1024];
    struct proto_enc e;
    proto_enc_init(&e, list, sizeof(list));
    struct proto_unlinks_item it = {PROTO_ROOT_INO, 0, 0, proto_str_c("u0")};
    for (int i = 0; i <= PROTO_MAX_UNLINKS; i++)
        proto_unlinks_item_put(&e, &it);
    struct proto_unlinks_req q = {.cred = {0}, .items = {list, 5}};
    struct proto_unlinks_rep r;
    bool tr = false;
    rc = net_call_unlinks(c, &q, &r, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "metad: an UNLINKS of a 5-byte list gave %d", rc);
    q.items.len = 0;
    rc = net_call_unlinks(c, &q, &r, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "metad: an UNLINKS of no items gave %d", rc);
    q.items.len = (uint32_t)e.len;
    rc = net_call_unlinks(c, &q, &r, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "metad: an UNLINKS of %d items gave %d", PROTO_MAX_UNLINKS + 1, rc);
    struct stat st;
    CHECK(stria_stat(fs, "/u0", &st) == 0, "metad: a refused UNLINKS removed /u0");
    /* u0, a name that is not there, u1: removed, ENOENT, removed. */
    proto_enc_init(&e, list, sizeof(list));
    const char *names[3] = {"u0", "nope", "u1"};
    for (int i = 0; i < 3; i++) {
        it.path = proto_str_c(names[i]);
        proto_unlinks_item_put(&e, &it);
    }
    q.items.len = (uint32_t)e.len;
    rc = net_call_unlinks(c, &q, &r, NULL, 0, NULL, 0, NULL, &tr);
    CHECK(rc == 0, "metad: an UNLINKS of three names gave %d", rc);
    struct proto_dec d;
    proto_dec_init(&d, r.results.p, r.results.len);
    for (int i = 0; rc == 0 && i < 3; i++) {
        int32_t status = 1;
        struct proto_blob one;
        struct proto_unlink_rep ur = {0};
        struct proto_dec od;
        CHECK(proto_result_get(&d, &status, &one) == 0, "metad: UNLINKS result %d", i);
        proto_dec_init(&od, one.p, one.len);
        int want = i == 1 ? -ENOENT : 0;
        CHECK(status == want, "metad: UNLINKS of %s gave %d, want %d", names[i], status, want);
        CHECK(status || (proto_dec_unlink_rep(&od, &ur) == 0 && ur.gone && ur.ino),
              "metad: UNLINKS of %s: its reply says nothing of the file", names[i]);
    }
    CHECK(rc || d.off == d.len, "metad: UNLINKS: %zu bytes after the results", d.len - d.off);
    CHECK(stria_stat(fs, "/u0", &st) == -ENOENT && stria_stat(fs, "/u1", &st) == -ENOENT,
          "metad: /u0 or /u1 is still there after its UNLINKS");
    unlinks_slots(fs, c);
    net_close(c);
    stria_disconnect(fs);
}

/* A server of protocol version 3 (before READs sent unread): the client
 * refuses it at the handshake (EPROTONOSUPPORT), not at its first READ. */
/* DOM_WRITES whose list does not parse, is empty or too long, or does not
 * match the bulk: -EINVAL, and the connection goes on; a list that
 * parses answers each item, here a file without a Data-on-MDT component
 * (-ESTALE), which changes nothing. */
static void bad_dom_writes(uint16_t port, const char *conf)
{
    stria_fs_t *fs;
    struct net_conn *c;
    const char *files[] = {"/dw"};
    int rc = client_and_conn(port, conf, files, 1, &fs, &c);
    if (rc)
        return;
    struct stat st;
    CHECK(stria_stat(fs, "/dw", &st) == 0, "stat /dw");
    static uint8_t list[PROTO_MAX_REQ_PAYLOAD - 1024], bulk[4 * (PROTO_MAX_DOM_WRITES + 1)];
    struct proto_enc e;
    proto_enc_init(&e, list, sizeof(list));
    struct proto_dom_writes_item it = {.ino = (uint64_t)st.st_ino, .len = 4};
    for (int i = 0; i <= PROTO_MAX_DOM_WRITES; i++)
        proto_dom_writes_item_put(&e, &it);
    struct proto_dom_writes_req q = {.cred = {0}, .items = {list, 5}};
    struct proto_dom_writes_rep r;
    bool tr = false;
    const struct {
        uint32_t items; /* bytes of the list */
        uint32_t bulk;
        const char *what;
    } bad[] = {{5, 4, "a 5-byte list"},
               {0, 0, "no items"},
               {(uint32_t)e.len, 4 * (PROTO_MAX_DOM_WRITES + 1), "too many items"},
               {(uint32_t)e.len / (PROTO_MAX_DOM_WRITES + 1), 8, "a bulk longer than its items"},
               {(uint32_t)e.len / (PROTO_MAX_DOM_WRITES + 1) * 2, 7, "a bulk shorter"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        q.items.len = bad[i].items;
        rc = net_call_dom_writes(c, &q, &r, bulk, bad[i].bulk, NULL, 0, NULL, &tr);
        CHECK(rc == -EINVAL && !tr, "metad: a DOM_WRITES of %s gave %d", bad[i].what, rc);
    }
    proto_enc_init(&e, list, sizeof(list));
    it.len = 0;
    proto_dom_writes_item_put(&e, &it);
    q.items.len = (uint32_t)e.len;
    rc = net_call_dom_writes(c, &q, &r, bulk, 0, NULL, 0, NULL, &tr);
    CHECK(rc == -EINVAL && !tr, "metad: a DOM_WRITES of an empty write gave %d", rc);
    proto_enc_init(&e, list, sizeof(list));
    uint8_t crcs[8];
    proto_csum_fill(0, bulk, 4, crcs);
    it.len = 4;
    it.crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(0, 4)};
    proto_dom_writes_item_put(&e, &it);
    proto_dom_writes_item_put(&e, &it);
    q.items.len = (uint32_t)e.len;
    rc = net_call_dom_writes(c, &q, &r, bulk, 8, NULL, 0, NULL, &tr);
    CHECK(rc == 0, "metad: a DOM_WRITES of two writes gave %d", rc);
    struct proto_dec d;
    proto_dec_init(&d, r.results.p, rc ? 0 : r.results.len);
    for (int i = 0; rc == 0 && i < 2; i++) {
        int32_t status = 0;
        struct proto_blob one;
        CHECK(proto_result_get(&d, &status, &one) == 0 && status == -ESTALE,
              "metad: DOM_WRITES to a file without the component: item %d gave %d", i, status);
    }
    CHECK(stria_stat(fs, "/dw", &st) == 0 && st.st_size == 0, "metad: /dw grew to %lld bytes",
          (long long)st.st_size);
    net_close(c);
    stria_disconnect(fs);
}

static void *old_server(void *arg)
{
    int lfd = *(int *)arg;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    uint8_t nonce[AUTH_NONCE_LEN] = {0}, payload[256], hb[PROTO_HDR_LEN];
    struct proto_hello_req hello = {
        .min_version = 3, .max_version = 3, .nonce = {nonce, AUTH_NONCE_LEN}};
    struct proto_enc e;
    proto_enc_init(&e, payload, sizeof(payload));
    proto_enc_hello_req(&e, &hello);
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = 3,
                          .opcode = PROTO_OP_HELLO,
                          .payload_len = (uint32_t)e.len};
    proto_hdr_encode(&h, hb);
    if (write(fd, hb, sizeof(hb)) == (ssize_t)sizeof(hb) &&
        write(fd, payload, e.len) == (ssize_t)e.len)
        closed_by_peer(fd);
    close(fd);
    return NULL;
}

static void old_server_refused(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&a, &len)) {
        CHECK(0, "old server: cannot listen: %s", strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, old_server, &lfd);
    struct net_conn *c = NULL;
    int rc = net_connect("127.0.0.1", ntohs(a.sin_port), &key, 12, "tester", 3000, &c);
    CHECK(rc == -EPROTONOSUPPORT, "a version 3 server: connect gave %d, want -EPROTONOSUPPORT", rc);
    if (rc == 0)
        net_close(c);
    pthread_join(t, NULL);
    close(lfd);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the server has closed fd, without waiting. */
static bool peer_closed(int fd)
{
    char buf[256];
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
        return false;
    return read(fd, buf, sizeof(buf)) <= 0;
}

/* A real client: connect, authenticate and PING, within 3 handshake
 * timeouts (tries again while it is refused for want of a slot). */
static bool real_client_served(uint16_t port, int handshake_ms, double *after)
{
    double t0 = now_s();
    while (now_s() - t0 < 3.0 * handshake_ms / 1000.0) {
        struct net_conn *c = NULL;
        if (net_connect(host, port, &key, 77, "real client", 1000, &c) == 0) {
            struct proto_ping_req pq = {0};
            struct proto_ping_rep pr;
            bool tr = false;
            int rc = net_call_ping(c, &pq, &pr, NULL, 0, NULL, 0, NULL, &tr);
            net_close(c);
            if (rc == 0) {
                *after = now_s() - t0;
                return true;
            }
        }
        usleep(50000);
    }
    return false;
}

/* Peers that never authenticate, each sending one byte of an AUTH header
 * every handshake_ms / 4 (from a thread of their own) until the server
 * closes it or they are told to stop. */
struct dribble {
    int n, fds[256];
    double t0, closed_at[256]; /* -1: still open */
    int handshake_ms;
    volatile int stop;
    size_t sent;
};

static void *dribble_main(void *arg)
{
    struct dribble *d = arg;
    struct proto_hdr h = hdr(PROTO_OP_AUTH, 200, 1);
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(&h, hb);
    /* Bounded: 10 handshake timeouts at most. */
    for (int round = 0; round < 40 && !d->stop; round++) {
        int open_left = 0;
        for (int i = 0; i < d->n; i++) {
            if (d->fds[i] < 0 || d->closed_at[i] >= 0)
                continue;
            if (peer_closed(d->fds[i]) ||
                send(d->fds[i], &hb[d->sent % PROTO_HDR_LEN], 1, MSG_NOSIGNAL) != 1)
                d->closed_at[i] = now_s() - d->t0;
            else
                open_left++;
        }
        if (!open_left)
            break;
        d->sent++;
        usleep((useconds_t)d->handshake_ms * 250);
    }
    return NULL;
}

static int dribble_start(struct dribble *d, uint16_t port, int handshake_ms, int n, pthread_t *t)
{
    memset(d, 0, sizeof(*d));
    d->n = n > 256 ? 256 : n;
    d->handshake_ms = handshake_ms;
    d->t0 = now_s();
    int opened = 0;
    for (int i = 0; i < d->n; i++) {
        d->fds[i] = net_tcp_connect(host, port, 2000);
        d->closed_at[i] = -1;
        opened += d->fds[i] >= 0;
    }
    pthread_create(t, NULL, dribble_main, d);
    return opened;
}

static void dribble_stop(struct dribble *d, pthread_t t)
{
    d->stop = 1;
    pthread_join(t, NULL);
    for (int i = 0; i < d->n; i++)
        if (d->fds[i] >= 0)
            close(d->fds[i]);
}

/* A per-read timeout never fires for slow peers; the handshake's deadline
 * must, and free their slots: n of them take every slot of the daemon,
 * and a real client must still get in. */
static void slow_peers(uint16_t port, int handshake_ms, int n)
{
    double limit = 3.0 * handshake_ms / 1000.0;
    struct dribble *d = calloc(1, sizeof(*d));
    pthread_t t;
    int opened = dribble_start(d, port, handshake_ms, n, &t);
    CHECK(opened == n, "slow peers: %d of %d connected", opened, n);
    pthread_join(t, NULL); /* it ends when all are closed, or after 10 timeouts */
    int late = 0;
    double last = 0;
    for (int i = 0; i < d->n; i++) {
        if (d->fds[i] < 0)
            continue;
        if (d->closed_at[i] < 0 || d->closed_at[i] > limit)
            late++;
        if (d->closed_at[i] > last)
            last = d->closed_at[i];
    }
    printf("   %d slow peers (one byte every %d ms, %zu bytes each at most): the last closed "
           "after %.2f s, %d not within %.1f s (handshake timeout %d ms)\n",
           opened, handshake_ms / 4, d->sent, last, late, limit, handshake_ms);
    CHECK(late == 0, "slow peers: %d of %d were not closed within 3 x the handshake timeout", late,
          opened);
    dribble_stop(d, t);
    /* Their slots are free once the server has seen them go. */
    double after = 0;
    CHECK(real_client_served(port, handshake_ms, &after), "no slot came free after the peers left");

    /* Again, and this time a real client comes while they hold every slot.
     * The last real client's slot comes free when the server has seen it
     * go, which may be a moment after it went: up to three tries. */
    int held = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        opened = dribble_start(d, port, handshake_ms, n, &t);
        usleep((useconds_t)handshake_ms * 250);
        held = 0;
        for (int i = 0; i < d->n; i++)
            held += d->fds[i] >= 0 && d->closed_at[i] < 0;
        if (held == n || attempt == 2)
            break;
        dribble_stop(d, t);
        usleep((useconds_t)handshake_ms * 500);
    }
    CHECK(held == n, "only %d of %d slow peers got a slot", held, n);
    bool served = real_client_served(port, handshake_ms, &after);
    printf("   a real client while %d slow peers held every slot: %s after %.2f s\n", opened,
           served ? "served" : "not served", after);
    CHECK(served,
          "a real client was not served within 3 x the handshake timeout while %d slow "
          "peers were connected",
          opened);
    dribble_stop(d, t);
    free(d);
}

static void normal_work(const char *conf)
{
    stria_fs_t *fs;
    int rc = stria_connect(conf, &fs);
    CHECK(rc == 0, "connect: %d", rc);
    if (rc)
        return;
    size_t len = 9 << 20;
    char *buf = malloc(len), *back = malloc(len);
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(i * 31 + 7);
    stria_setstripe(fs, "/after-garbage", 4, 1 << 20, -1);
    stria_file_t *f;
    rc = stria_open(fs, "/after-garbage", O_RDWR, 0644, &f);
    CHECK(rc == 0, "open: %d", rc);
    if (rc == 0) {
        CHECK(stria_pwrite(f, buf, len, 0) == (ssize_t)len, "write");
        CHECK(stria_fsync(f) == 0, "fsync");
        CHECK(stria_pread(f, back, len, 0) == (ssize_t)len, "read");
        CHECK(memcmp(buf, back, len) == 0, "data differs");
        stria_close(f);
    }
    CHECK(stria_unlink(fs, "/after-garbage") == 0, "unlink");
    free(buf);
    free(back);
    stria_disconnect(fs);
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 10) {
        fprintf(stderr,
                "usage: %s HOST MGMT_PORT META_PORT STOR_PORT CLIENT_CONF KEY_FILE "
                "[SLOW_PORT HANDSHAKE_MS MAX_CONNS]\n",
                argv[0]);
        return 2;
    }
    host = argv[1];
    char err[256];
    if (auth_key_load(argv[6], &key, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    bad_key = key;
    bad_key.bytes[0] ^= 1;
    srand(12345);
    const char *names[3] = {"mgmtd", "metad", "stord"};
    uint16_t ops[3] = {PROTO_OP_HEARTBEAT, PROTO_OP_OPEN, PROTO_OP_WRITE};
    for (int i = 0; i < 3; i++) {
        uint16_t port = (uint16_t)atoi(argv[2 + i]);
        printf("== %s on port %u\n", names[i], port);
        raw_garbage(names[i], port);
        wrong_key(names[i], port);
        after_auth(names[i], port, ops[i]);
    }
    printf("== checksums of data on the wire (stord)\n");
    wire_checksums((uint16_t)atoi(argv[4]));
    printf("== UNLINKS lists (metad)\n");
    bad_unlinks((uint16_t)atoi(argv[3]), argv[5]);
    bad_dom_writes((uint16_t)atoi(argv[3]), argv[5]);
    printf("== a server of an older protocol is refused at the handshake\n");
    old_server_refused();
    if (argc == 10) {
        printf("== peers that never authenticate, one byte at a time\n");
        slow_peers((uint16_t)atoi(argv[7]), atoi(argv[8]), atoi(argv[9]));
    }
    printf("== normal work through libstria\n");
    normal_work(argv[5]);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
