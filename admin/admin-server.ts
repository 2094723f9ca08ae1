// The admin HTTP server (--http-addr): readiness, debug views of every layer, the mock registry's
// write API, and the read-only dashboard at /ui/ (static assets built into dist/ui/). JSON in, JSON out.
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
import type { CertificateAuthority } from '../ca/authority.js';
import type { StoreState } from '../ca/ca-store.js';
import { caz } from './caz.js';
import { configz } from './configz.js';
import { edsz } from './edsz.js';
import type { DiffService } from './diff.js';
import { handleMockRequest } from './mock-api.js';
import { foreignHost, foreignRequest } from './same-origin.js';
import { configSync } from './config-sync.js';
import { parseGeneration, waitz } from './waitz.js';
import { adsz, registryz } from './debug-views.js';
import { overviewz, readiness } from './overviewz.js';
import { proxyConfigz } from './proxy-configz.js';
import type { PushHistory } from './push-history.js';
import type { HistoryEntry } from '../store/history.js';
import type { CazView, HistoryzView, PushStatusView } from '../model/admin-api.js';
import { servicez } from './servicez.js';
import { syncz } from './syncz.js';
import { UiAssets } from './ui-assets.js';
import type { RegistrationView } from '../registration/auto-registration.js';
import { configDump } from '../xds/server/config-dump.js';
import { envoyConfigDump } from '../xds/server/envoy-config-dump.js';

export interface AdminDeps {
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  /** The config directory (for /debug/configz), when the `config` registry is enabled. */
  readonly config?: {
    debugState(): ConfigDebugState;
    meshConfig(): MeshConfig;
    /** The config generation in force (config-dir/generations.ts). */
    generation?(): number;
    /** Takes in every change on disk now; resolves to the generation in force after (config_sync). */
    sync?(): Promise<number>;
  };
  readonly mock?: MockRegistry;
  /** POST /debug/diff: a candidate of the config directory previewed per proxy (with the config registry). */
  readonly diff?: DiffService;
  /** VMs registered through their agents, listed in /debug/registryz. */
  readonly autoRegistration?: { list(): readonly RegistrationView[] };
  readonly metrics?: PortolanMetrics;
  readonly store?: Store;
  /** --store: every replica's history rows from PostgreSQL (newest first), for /debug/historyz. */
  readonly sharedHistory?: (limit: number) => Promise<readonly HistoryEntry[]>;
  /** Recent pushes and NACKs (/debug/push_status), when the ADS server reports to it. */
  readonly pushHistory?: PushHistory;
  /** The built-in CA (/debug/caz). */
  readonly ca?: CertificateAuthority;
  /** Several replicas on a shared store (--store postgres://): /debug/replicas, and the store's state in /ready and /debug/registryz. */
  readonly replicas?: { storeState(): StoreState; view(): Promise<unknown> };
  /** Where the dashboard's files are (default: dist/ui beside this module). */
  readonly uiDir?: URL;
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
  /** The listen host, as given: the mock API accepts requests that name it (same-origin.ts). */
  private host = '127.0.0.1';
  private readonly ui: UiAssets;

  constructor(private readonly deps: AdminDeps) {
    this.ui = new UiAssets(deps.uiDir ?? new URL('../ui/', import.meta.url));
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    this.host = host;
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
    // DNS rebinding: a page under a hostile name resolved to this address reads nothing (the mock API checks Origin too). Health
    // checks and scrapers address the port by whatever name they know it: /ready and /metrics
    // (no mesh config in them) stay open to any Host.
    if (path !== '/ready' && path !== '/metrics') {
      const foreign = foreignHost(req.headers.host, this.host);
      if (foreign) throw new HttpError(403, foreign);
    }
    if (path.startsWith('/mock/')) {
      if (!this.deps.mock) throw new HttpError(404, 'the mock registry is not enabled (--registries mock)');
      const api = { mock: this.deps.mock, owners: this.deps.discovery, adminHost: this.host };
      const result = await handleMockRequest(api, req, path);
      return sendJson(res, result.status, result.body);
    }
    if (path === '/debug/config_sync') {
      if (req.method !== 'POST')
        throw new HttpError(405, `${req.method ?? ''} not allowed on ${path}; POST it`);
      const foreign = foreignRequest(req, this.host);
      if (foreign) throw new HttpError(403, foreign);
      const result = await configSync(this.deps.config, req);
      return sendJson(res, result.status, result.body);
    }
    // The one POST besides the mock API: a preview that changes nothing (admin/diff.ts).
    if (path === '/debug/diff') {
      if (!this.deps.diff)
        throw new HttpError(404, 'the config registry is not enabled (--registries config)');
      const result = await this.deps.diff.handle(req, this.host);
      return sendJson(res, result.status, result.body);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD')
      throw new HttpError(405, `${req.method ?? ''} not allowed on ${path}`);
    if (path === '/' || path === '/ui') {
      res.writeHead(302, { location: '/ui/' });
      res.end();
      return;
    }
    if (path.startsWith('/ui/')) {
      if (!this.ui.serve(path.slice('/ui/'.length), req, res))
        throw new HttpError(404, this.ui.available ? `no such path: ${path}` : this.ui.missing);
      return;
    }
    switch (path) {
      case '/ready':
        return this.ready(res);
      case '/debug/syncz': {
        const proxyId = url.searchParams.get('proxyID') ?? undefined;
        const view = syncz(this.deps.ads.streamList(), proxyId);
        if (proxyId !== undefined && view.proxies.length === 0)
          throw new HttpError(404, `no connected proxy with node id ${proxyId}`);
        return sendJson(res, 200, view);
      }
      case '/debug/push_status': {
        const history = this.deps.pushHistory;
        if (!history) throw new HttpError(404, 'push history is not enabled');
        return sendJson(res, 200, {
          pushes: this.deps.ads.pushes,
          recent: history.pushes(),
          series: history.series(),
          nacks: history.nacks(),
        } satisfies PushStatusView);
      }
      case '/debug/waitz': {
        let generation: number;
        try {
          generation = parseGeneration(url.searchParams.get('generation'));
        } catch (e) {
          throw new HttpError(400, e instanceof Error ? e.message : String(e));
        }
        const current = this.deps.config?.generation?.() ?? 0;
        const view = waitz(
          this.deps.ads.streamList(),
          generation,
          current,
          this.deps.ads.pushedGenerations(),
        );
        return sendJson(res, 200, view);
      }
      case '/debug/edsz': {
        const proxyId = url.searchParams.get('proxyID');
        if (!proxyId) throw new HttpError(400, 'proxyID query parameter is required');
        const stream = this.deps.ads.findStream(proxyId);
        if (!stream) throw new HttpError(404, `no connected proxy with node id ${proxyId}`);
        return sendJson(res, 200, edsz(stream, proxyId));
      }
      case '/debug/proxy_configz': {
        const proxyId = url.searchParams.get('proxyID');
        if (!proxyId) throw new HttpError(400, 'proxyID query parameter is required');
        const stream = this.deps.ads.findStream(proxyId);
        if (!stream) throw new HttpError(404, `no connected proxy with node id ${proxyId}`);
        return sendJson(res, 200, proxyConfigz(stream, proxyId));
      }
      case '/debug/overviewz':
        return sendJson(
          res,
          200,
          overviewz(
            this.deps.discovery,
            this.deps.ads,
            this.deps.config?.debugState(),
            this.deps.pushHistory,
          ),
        );
      case '/debug/servicez': {
        const limit = Math.min(5000, Number(url.searchParams.get('limit') ?? 500) || 500);
        return sendJson(res, 200, servicez(this.deps.discovery, url.searchParams.get('q') ?? '', limit));
      }
      case '/debug/caz': {
        if (!this.deps.ca || !this.deps.store) throw new HttpError(404, 'the built-in CA is not enabled');
        const view = caz(this.deps.ca, this.deps.store);
        // With a shared store the tokens and the issuance log are in PostgreSQL, not in this
        // replica's SQLite: an empty list here would be a wrong answer, so none is given.
        return sendJson(
          res,
          200,
          this.deps.replicas
            ? ({
                ...view,
                joinTokens: [],
                issued: [],
                sharedStore:
                  'join tokens and issued certificates are in the shared store: portolan token list --store URL',
              } satisfies CazView)
            : view,
        );
      }
      case '/debug/registryz': {
        const view = registryz(this.deps.discovery, this.deps.autoRegistration);
        const replicas = this.deps.replicas;
        return sendJson(res, 200, replicas ? { ...(view as object), store: replicas.storeState() } : view);
      }
      case '/debug/replicas': {
        if (!this.deps.replicas)
          throw new HttpError(404, 'one replica: no shared store (--store postgres://…, docs/ha.md)');
        return sendJson(res, 200, await this.deps.replicas.view());
      }
      case '/debug/configz':
        if (!this.deps.config)
          throw new HttpError(404, 'the config registry is not enabled (--registries config)');
        return sendJson(
          res,
          200,
          configz(this.deps.config.debugState(), this.deps.config.meshConfig(), this.deps.ads),
        );
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
        // Under --store the shared rows; the local ones if the database does not answer.
        let changes: readonly HistoryEntry[] | undefined;
        let from = 'local';
        if (this.deps.sharedHistory) {
          try {
            changes = await this.deps.sharedHistory(limit);
            from = 'shared';
          } catch {
            from = 'local (shared store unreachable)';
          }
        }
        return sendJson(res, 200, {
          changes: changes ?? this.deps.store.history.recent(limit),
          changesFrom: from,
          proxies: this.deps.store.proxies.recent(limit),
        } satisfies HistoryzView);
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
    const { ready, detail } = readiness(this.deps.discovery);
    res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
    // xDS readiness does not hang on the shared store: its state is told, not waited for.
    const store = this.deps.replicas?.storeState();
    const storeLine = store
      ? `\nstore: ${store.kind} ${store.state} since ${store.since}${store.lastError ? ` (${store.lastError})` : ''}`
      : '';
    res.end(`${detail}${storeLine}\n`);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body, null, 2)}\n`);
}
