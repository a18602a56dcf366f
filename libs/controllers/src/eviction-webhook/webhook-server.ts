import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type Server, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '@aro/observability';
import { describeError } from '../shared/describe-error';
import { admissionRequestOf, reviewWith } from './admission-review';
import type { EvictionAdmission } from './eviction-admission';

/** The path the ValidatingWebhookConfiguration names. */
export const EVICTION_WEBHOOK_PATH = '/validate-pods-eviction';
/** An AdmissionReview of one eviction is a few KiB; anything far larger is not one. */
const MAX_BODY_BYTES = 1 << 20;

export interface EvictionWebhookServerOptions {
  port: number;
  bindAddress: string;
  /** Folder with `tls.crt` and `tls.key` (a kubernetes.io/tls Secret mounted), read at start. */
  certDir?: string;
  /** The certificate and key themselves (tests). */
  tls?: { cert: string; key: string };
  /**
   * How long one review may take; below the webhook's `timeoutSeconds`, so that the caller gets this
   * webhook's refusal (retried) rather than the apiserver's timeout (which failurePolicy Ignore allows).
   */
  reviewTimeoutMs: number;
}

/**
 * The HTTPS endpoint the API server calls for each eviction of a runner pod. Served by every replica,
 * not only the leader: the Service in front of it balances over all ready replicas, and a review reads
 * the pod and runner from the API server and asks the Actions service, with no state of the leader's.
 * A standby that refused would, under failurePolicy Ignore, let the eviction through unreviewed.
 */
export class EvictionWebhookServer {
  private server?: Server;
  /** Reviews answered since start: how a test knows the API server has begun calling this webhook. */
  reviewed = 0;

  constructor(
    private readonly admission: EvictionAdmission,
    private readonly options: EvictionWebhookServerOptions,
    private readonly logger: Logger,
  ) {}

  /** Serves `tls`, else the options' pair, else the pair in the certificate folder. */
  async start(tls = this.options.tls ?? this.readCertificate()): Promise<void> {
    const server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.bindAddress, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.logger.info('Serving the eviction admission webhook', {
      port: this.port(),
      path: EVICTION_WEBHOOK_PATH,
    });
  }

  /**
   * Serves `tls` from the next connection on (a renewed certificate); connections already open finish
   * on the pair they began with, which the CA bundle still trusts.
   */
  replaceCertificate(tls: { cert: string; key: string }): void {
    this.server?.setSecureContext({ cert: tls.cert, key: tls.key });
  }

  /** The port bound (the one asked for, or the one the system chose for 0). */
  port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
  }

  private readCertificate(): { cert: string; key: string } {
    const dir = this.options.certDir ?? '';
    try {
      return {
        cert: readFileSync(join(dir, 'tls.crt'), 'utf8'),
        key: readFileSync(join(dir, 'tls.key'), 'utf8'),
      };
    } catch (err) {
      throw new Error(
        `the eviction webhook needs its serving certificate in ${dir}/tls.crt and tls.key: ${describeError(err)}`,
        { cause: err },
      );
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== EVICTION_WEBHOOK_PATH) {
      res.writeHead(404).end();
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(describeError(err));
      return;
    }
    let request;
    try {
      request = admissionRequestOf(body);
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(describeError(err));
      return;
    }
    const signal = AbortSignal.timeout(this.options.reviewTimeoutMs);
    const response = await this.admission.review(request, signal);
    this.reviewed++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reviewWith(response)));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`the request body is over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
