// The agent's status port (`--status-addr`, loopback by default): GET /healthz/ready (200 or 503,
// the body says why), GET /metrics, GET /debug/config_dump[?proxyID=NODE]. Read-only; other agent
// modules may add GET routes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../log/logger.js';
import { foreignHost } from '../../model/host-header.js';

// Health checks and scrapers may use any name they know; everything else (the config dump, routes
// other modules add) shows the VM's config, so a DNS-rebinding page must not read it.
const ANY_HOST = new Set(['/healthz/ready', '/metrics']);

export interface Readiness {
  readonly ready: boolean;
  /** One line per condition, e.g. "certificate: valid until …". */
  readonly lines: readonly string[];
}

export type Route = (query: URLSearchParams) => Promise<{ status: number; type: string; body: string }>;

export interface StatusServerOptions {
  readonly host: string;
  readonly port: number;
  readonly logger: Logger;
  readonly readiness: () => Readiness;
  readonly metrics: () => Promise<{ type: string; body: string }>;
  readonly configDump: (proxyId: string | undefined) => { status: number; body: unknown };
}

export class StatusServer {
  private server: Server | undefined;
  private readonly routes = new Map<string, Route>();
  address = '';

  constructor(private readonly options: StatusServerOptions) {
    this.routes.set('/healthz/ready', () => {
      const r = this.options.readiness();
      return Promise.resolve({
        status: r.ready ? 200 : 503,
        type: 'text/plain; charset=utf-8',
        body: `${r.ready ? 'ready' : 'not ready'}\n${r.lines.join('\n')}\n`,
      });
    });
    this.routes.set('/metrics', async () => ({ status: 200, ...(await this.options.metrics()) }));
    this.routes.set('/debug/config_dump', (query) => {
      const { status, body } = this.options.configDump(query.get('proxyID') ?? undefined);
      return Promise.resolve({
        status,
        type: 'application/json',
        body: `${JSON.stringify(body, null, 2)}\n`,
      });
    });
  }

  /** Serves `path` with `route` (GET only). */
  addRoute(path: string, route: Route): void {
    this.routes.set(path, route);
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.options.logger.error({ err, url: req.url }, 'status request failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      });
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { address, port } = server.address() as AddressInfo;
    this.address = `${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://agent');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request\n');
      return;
    }
    const route = this.routes.get(url.pathname);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${url.pathname}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET' }).end('method not allowed\n');
      return;
    }
    const foreign = ANY_HOST.has(url.pathname)
      ? undefined
      : foreignHost(req.headers.host, this.options.host, "the agent's status address");
    if (foreign) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`${foreign}\n`);
      return;
    }
    const { status, type, body } = await route(url.searchParams);
    res.writeHead(status, { 'content-type': type });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
