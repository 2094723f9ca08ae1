// The admin HTTP server (--http-addr): readiness, debug views of every layer, and the mock
// registry's write API. JSON in, JSON out.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import type { MockRegistry } from '../adapters/mock/registry.js';
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import type { ConfigDebugState } from '../config-dir/debug-state.js';
import type { MeshConfig } from '../mesh/mesh-config.js';
import { configz } from './configz.js';
import { handleMockRequest } from './mock-api.js';
import { adsz, registryz } from './debug-views.js';
import type { RegistrationView } from '../registration/auto-registration.js';
import { configDump } from '../xds/server/config-dump.js';
import { envoyConfigDump } from '../xds/server/envoy-config-dump.js';

export interface AdminDeps {
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  /** The config directory (for /debug/configz), when the `config` registry is enabled. */
  readonly config?: { debugState(): ConfigDebugState; meshConfig(): MeshConfig };
  readonly mock?: MockRegistry;
  /** VMs registered through their agents, listed in /debug/registryz. */
  readonly autoRegistration?: { list(): readonly RegistrationView[] };
  readonly metrics?: PortolanMetrics;
  readonly store?: Store;
  readonly logger: Logger;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class AdminServer {
  private server: Server | undefined;

  constructor(private readonly deps: AdminDeps) {}

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        const status = err instanceof HttpError ? err.status : 500;
        if (status === 500) this.deps.logger.error({ err, url: req.url }, 'admin request failed');
        sendJson(res, status, { error: err instanceof Error ? err.message : String(err) });
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://admin');
    const path = url.pathname;
    if (path.startsWith('/mock/')) {
      if (!this.deps.mock) throw new HttpError(404, 'the mock registry is not enabled (--registries mock)');
      const result = await handleMockRequest(this.deps.mock, req, path);
      return sendJson(res, result.status, result.body);
    }
    if (req.method !== 'GET') throw new HttpError(405, `${req.method ?? ''} not allowed on ${path}`);
    switch (path) {
      case '/ready':
        return this.ready(res);
      case '/debug/registryz':
        return sendJson(res, 200, registryz(this.deps.discovery, this.deps.autoRegistration));
      case '/debug/configz':
        if (!this.deps.config)
          throw new HttpError(404, 'the config registry is not enabled (--registries config)');
        return sendJson(res, 200, configz(this.deps.config.debugState(), this.deps.config.meshConfig()));
      case '/metrics': {
        if (!this.deps.metrics) throw new HttpError(404, 'metrics are not enabled');
        const body = await this.deps.metrics.registry.metrics();
        res.writeHead(200, { 'content-type': this.deps.metrics.registry.contentType });
        res.end(body);
        return;
      }
      case '/debug/historyz': {
        if (!this.deps.store) throw new HttpError(404, 'no store');
        const limit = Math.min(1000, Number(url.searchParams.get('limit') ?? 100) || 100);
        return sendJson(res, 200, {
          changes: this.deps.store.history.recent(limit),
          proxies: this.deps.store.proxies.recent(limit),
        });
      }
      case '/debug/adsz':
        return sendJson(res, 200, adsz(this.deps.ads));
      case '/debug/config_dump': {
        const proxyId = url.searchParams.get('proxyID');
        if (!proxyId) throw new HttpError(400, 'proxyID query parameter is required');
        const stream = this.deps.ads.findStream(proxyId);
        if (!stream) throw new HttpError(404, `no connected proxy with node id ${proxyId}`);
        // Envoys get the shape of Envoy's own /config_dump; other clients the per-type list.
        if (stream.proxy?.kind === 'envoy') return sendJson(res, 200, envoyConfigDump(stream));
        return sendJson(res, 200, { proxyID: proxyId, configs: configDump(stream) });
      }
      default:
        throw new HttpError(404, `no such path: ${path}`);
    }
  }

  private ready(res: ServerResponse): void {
    const waiting = this.deps.discovery.registries.filter((r) => !r.hasSynced()).map((r) => r.name);
    if (waiting.length > 0) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end(`not ready: waiting for registries to sync: ${waiting.join(', ')}\n`);
      return;
    }
    const stored = this.deps.discovery.registries.flatMap((r) => {
      const from = r.status().restoredFrom;
      return from ? [`${r.name} (synced at ${from})`] : [];
    });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(
      stored.length ? `ready; serving stored snapshots until live sync: ${stored.join(', ')}\n` : 'ready\n',
    );
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body, null, 2)}\n`);
}
