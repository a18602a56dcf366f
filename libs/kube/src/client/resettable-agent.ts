import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';

/*
 * Keep-alive agents whose TCP connections can all be ended with a reset. Closing a socket the usual way
 * (destroy(), or the process exiting) lets the kernel go on sending what the socket still holds, and it
 * retransmits into a partition for up to minutes: a request written just before the network went away
 * then reaches the apiserver once it comes back, seen on the real node as a leader's write arriving
 * after another replica had taken its lease. A reset (SO_LINGER 0) discards it instead. TLS sockets
 * cannot be reset themselves (their handle is the TLS wrap), so each TLS connection runs over a plain
 * TCP socket made here and kept.
 */

function track(open: Set<net.Socket>, socket: net.Socket): net.Socket {
  open.add(socket);
  socket.once('close', () => open.delete(socket));
  return socket;
}

function connectTcp(options: http.ClientRequestArgs): net.Socket {
  return net.connect({
    host: options.hostname ?? options.host ?? undefined,
    port: Number(options.port),
  });
}

class ResettableHttpsAgent extends https.Agent {
  constructor(private readonly open: Set<net.Socket>) {
    super({ keepAlive: true });
  }

  override createConnection(options: https.RequestOptions): Duplex {
    const socket = track(this.open, connectTcp(options));
    // The request's TLS options (CA, client certificate, servername) as the default agent passes them.
    return tls.connect({ ...(options as tls.ConnectionOptions), socket });
  }
}

class ResettableHttpAgent extends http.Agent {
  constructor(private readonly open: Set<net.Socket>) {
    super({ keepAlive: true });
  }

  override createConnection(options: http.ClientRequestArgs): Duplex {
    return track(this.open, connectTcp(options));
  }
}

/** A keep-alive agent for `protocol` and a way to reset every connection it has open. */
export function resettableAgent(protocol: string): { agent: http.Agent; resetAll: () => number } {
  const open = new Set<net.Socket>();
  const agent = protocol === 'https:' ? new ResettableHttpsAgent(open) : new ResettableHttpAgent(open);
  return {
    agent,
    resetAll: () => {
      const sockets = [...open];
      for (const socket of sockets) {
        if (socket.destroyed) continue;
        socket.resetAndDestroy();
      }
      return sockets.length;
    },
  };
}
