// A byte relay between two network namespaces, through a unix socket (a path, which every namespace
// sees): `node relay.ts <listen> <target>`, each `tcp:HOST:PORT` or `unix:PATH`.
//
// The real node lives in a network namespace of its own with no route out, so the host's loopback
// services (the apiserver, the simulator) reach it as two relays: one in the host namespace listening on
// `unix:PATH` and connecting to `tcp:127.0.0.1:PORT`, one in the node's namespace listening on a
// `tcp:` address of the node and connecting to `unix:PATH`. Nothing is routed, no address is added to the
// host, and TLS passes through untouched (the apiserver's certificate names the in-node address).
//
// Run by the pinned Node as it is (Node 24 strips the types): only Node's own modules, erasable syntax.
import { createConnection, createServer, type Socket } from 'node:net';
import { rmSync } from 'node:fs';

type Endpoint = { kind: 'tcp'; host: string; port: number } | { kind: 'unix'; path: string };

function parse(text: string): Endpoint {
  if (text.startsWith('unix:')) return { kind: 'unix', path: text.slice('unix:'.length) };
  const match = /^tcp:(.+):(\d+)$/.exec(text);
  if (!match) throw new Error(`"${text}" is neither tcp:HOST:PORT nor unix:PATH`);
  return { kind: 'tcp', host: match[1], port: Number(match[2]) };
}

function connect(target: Endpoint): Socket {
  return target.kind === 'tcp'
    ? createConnection({ host: target.host, port: target.port })
    : createConnection({ path: target.path });
}

const [listenText, targetText] = process.argv.slice(2);
if (!listenText || !targetText) {
  process.stderr.write('usage: node relay.ts <tcp:HOST:PORT|unix:PATH> <tcp:HOST:PORT|unix:PATH>\n');
  process.exit(2);
}
const listen = parse(listenText);
const target = parse(targetText);

const server = createServer((inbound) => {
  const outbound = connect(target);
  // Either side closing or failing ends both, so a dead peer never leaves half a connection open.
  const end = (): void => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on('error', end).on('close', end);
  outbound.on('error', end).on('close', end);
  inbound.pipe(outbound);
  outbound.pipe(inbound);
});
server.on('error', (err) => {
  process.stderr.write(`relay ${listenText} -> ${targetText}: ${err.message}\n`);
  process.exit(1);
});
if (listen.kind === 'unix') {
  rmSync(listen.path, { force: true });
  server.listen(listen.path, () => process.stdout.write(`relay ready: ${listenText} -> ${targetText}\n`));
} else {
  server.listen(listen.port, listen.host, () =>
    process.stdout.write(`relay ready: ${listenText} -> ${targetText}\n`),
  );
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
