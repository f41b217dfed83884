/*
 * Connections and RPC over TCP (DESIGN §7).
 *
 * Client side: net_connect() opens an authenticated connection; requests
 * on one connection are answered in order. A connection is used by one
 * thread at a time (libstria pools them). Bulk data of a reply is read
 * straight into the caller's buffer.
 *
 * Server side: net_server_start() accepts connections and runs each on its
 * own thread: authenticate, then read a request, validate it, call the
 * handler for its opcode and write the reply. Anything malformed gets an
 * error reply, or the connection is closed when the byte stream cannot be
 * trusted any more; the server carries on with everyone else.
 *
 * This header is the umbrella the daemons, libstria and the tests include;
 * the API lives in client.h and server.h, each over frame.h (one message
 * on a socket), which is internal to src/net.
 */
#ifndef STRIA_NET_H
#define STRIA_NET_H

#include "client.h"
#include "server.h"

#endif
