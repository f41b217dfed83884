#!/usr/bin/python3
"""A reverse proxy that checks AWS Signature Version 4, for the tests.

s3rver 3.7.1 accepts any well-formed V4 signature without computing it, so
a client that signs wrongly (a double-encoded key, say) would pass against
it and fail against S3. This proxy recomputes every request's signature the
way S3 does (AWS's "Signature Version 4 signing process" for S3: the path
decoded once and encoded once, the query sorted, the signed headers
trimmed, the payload hash from x-amz-content-sha256) and answers 403
SignatureDoesNotMatch when it differs; otherwise it forwards the request to
s3rver and its reply back. Debian's aws passes through it too, which checks
the checker.

usage: sigv4_check.py LISTEN_PORT UPSTREAM_PORT   (both on 127.0.0.1)
Secrets: $SIGV4_KEYS = "ACCESS:SECRET[,ACCESS:SECRET...]".
"""
import hashlib
import hmac
import http.client
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEYS = dict(kv.split(":", 1) for kv in os.environ.get("SIGV4_KEYS", "").split(",") if kv)
UPSTREAM = int(sys.argv[2])
UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


def enc(s, keep_slash):
    return urllib.parse.quote(s, safe=UNRESERVED + ("/" if keep_slash else ""))


def canonical_query(q):
    pairs = []
    for part in q.split("&") if q else []:
        k, _, v = part.partition("=")
        pairs.append((enc(urllib.parse.unquote(k), False), enc(urllib.parse.unquote(v), False)))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def expected(method, raw_path, headers, auth):
    fields = dict(f.strip().split("=", 1) for f in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    access, date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    path, _, query = raw_path.partition("?")
    canon = "\n".join([
        method,
        enc(urllib.parse.unquote(path), True),
        canonical_query(query),
        "".join(f"{h}:{' '.join(headers.get(h, '').split())}\n" for h in signed),
        ";".join(signed),
        headers.get("x-amz-content-sha256", hashlib.sha256(b"").hexdigest()),
    ])
    scope = f"{date}/{region}/{service}/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", headers["x-amz-date"], scope,
                     hashlib.sha256(canon.encode()).hexdigest()])
    key = ("AWS4" + KEYS.get(access, "")).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return access, fields["Signature"], hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, headers, body):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "date",
                                 "server"):
                self.send_header(k, v)
        if self.command == "HEAD":
            self.send_header("Content-Length", dict((k.lower(), v) for k, v in headers)
                             .get("content-length", "0"))
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        auth = headers.get("authorization", "")
        if auth.startswith("AWS4-HMAC-SHA256 "):
            try:
                access, got, want = expected(self.command, self.path, headers, auth)
            except Exception as e:  # a malformed header is a failed signature
                access, got, want = "", "x", repr(e)
            if access in KEYS and got != want:
                self.reply(403, [("Content-Type", "application/xml")],
                           b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
                           b"SignatureDoesNotMatch</Code><Message>The request signature we "
                           b"calculated does not match the signature you provided. Check your "
                           b"key and signing method.</Message></Error>")
                return
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        fwd = {k: v for k, v in self.headers.items() if k.lower() not in ("expect", "connection")}
        up.request(self.command, self.path, body=body, headers=fwd)
        r = up.getresponse()
        data = r.read()
        self.reply(r.status, r.getheaders(), data)
        up.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
