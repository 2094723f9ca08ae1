// A stand-in Kubernetes API server (node:http on 127.0.0.1) for the kubernetes registry's tests, and
// faithful enough for the real `kubectl get` (checked in test/integration/kubernetes-kubectl.test.ts).
//
// What it covers, following the API conventions (https://kubernetes.io/docs/reference/using-api/api-concepts/):
// - Resources: core/v1 services, nodes, pods and discovery.k8s.io/v1 endpointslices; list (all
//   namespaces or one), get one, and watch. Objects change only through this class's methods.
// - resourceVersion: one counter across every resource (etcd's revision); each write bumps it and
//   stamps the object; lists carry the version they are consistent at.
// - Pagination: `limit` and `continue`; every page is served at the first page's version (the state
//   then is rebuilt from the history), and a token older than the compacted history is `410 Expired`.
//   A list with `resourceVersion` + `resourceVersionMatch=Exact` is served at that version, or 410.
// - Watch (`?watch=1`): newline-delimited JSON events on one chunked response. Without a
//   resourceVersion (or "0") the current objects come first as ADDED; with one, the history after it
//   is replayed, then live ADDED/MODIFIED/DELETED follow. `allowWatchBookmarks` gets BOOKMARK events
//   from `bookmark()`; `timeoutSeconds` ends the stream. A version older than the compacted history
//   is `410 Gone`, as an ERROR event carrying a Status (the watch cache's way, the default) or as the
//   HTTP status (`goneAs: 'http'`, etcd's way).
// - Tables: `Accept: ...;as=Table;g=meta.k8s.io;v=v1` gets a meta.k8s.io/v1 Table with kubectl's
//   columns (lists and watches), with PartialObjectMetadata rows, as the real server's printers do.
// - Discovery as kubectl reads it: /api, /apis, /api/v1, /apis/discovery.k8s.io/v1, /version (the
//   legacy, unaggregated form; kubectl falls back to it). No OpenAPI (`kubectl get` does not need it).
// - Failures: `down()`/`up()` (connection refused, then back on the same port), `hang` (accepts and
//   never answers), `honourWatchTimeouts = false`, `compact()`, `expireWatches()`, `endWatches()`;
//   `onRequest` lets a test act between two requests (e.g. two pages of a list).
// Not covered: writes over HTTP, label/field selectors, authentication, protobuf, aggregated discovery.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export type Resource = 'services' | 'endpointslices' | 'nodes' | 'pods';

interface ResourceType {
  readonly kind: string;
  readonly singular: string;
  readonly group: '' | 'discovery.k8s.io';
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
}

const TYPES: Readonly<Record<Resource, ResourceType>> = {
  services: { kind: 'Service', singular: 'service', group: '', namespaced: true, shortNames: ['svc'] },
  endpointslices: {
    kind: 'EndpointSlice',
    singular: 'endpointslice',
    group: 'discovery.k8s.io',
    namespaced: true,
    shortNames: [],
  },
  nodes: { kind: 'Node', singular: 'node', group: '', namespaced: false, shortNames: ['no'] },
  pods: { kind: 'Pod', singular: 'pod', group: '', namespaced: true, shortNames: ['po'] },
};

const RESOURCES = Object.keys(TYPES) as Resource[];

function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/v1` : 'v1';
}

export interface KubeObject {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

interface HistoryEvent {
  readonly rv: number;
  readonly resource: Resource;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObject;
  /** The object before this event (MODIFIED, DELETED), to rebuild past states for paginated lists. */
  readonly previous?: KubeObject;
}

interface Watch {
  readonly resource: Resource;
  readonly namespace: string | undefined;
  readonly res: ServerResponse;
  readonly bookmarks: boolean;
  readonly table: boolean;
  readonly timer: NodeJS.Timeout | undefined;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly accept: string;
}

export interface StandinOptions {
  /** How a too-old watch resourceVersion is refused: an ERROR event (default) or HTTP 410. */
  readonly goneAs?: 'event' | 'http';
}

export class KubeApiServerStandin {
  readonly requests: RecordedRequest[] = [];
  /** While true, requests are accepted and never answered. */
  hang = false;
  /** While false, watches ignore `timeoutSeconds` (a misbehaving proxy in front of the server). */
  honourWatchTimeouts = true;
  /** Called with each request before it is served, e.g. to change objects between list pages. */
  onRequest: ((request: RecordedRequest) => void) | undefined;
  private readonly objects = new Map<Resource, Map<string, KubeObject>>(RESOURCES.map((r) => [r, new Map()]));
  private history: HistoryEvent[] = [];
  private rv = 1000;
  /** Versions at or below this are compacted away. */
  private compactedRv = 1000;
  private readonly watches = new Set<Watch>();
  private readonly hung = new Set<ServerResponse>();
  private server: Server;
  private port = 0;

  private constructor(private readonly options: StandinOptions) {
    this.server = this.createServer();
  }

  static async start(options: StandinOptions = {}): Promise<KubeApiServerStandin> {
    const standin = new KubeApiServerStandin(options);
    await standin.listen(0);
    return standin;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The current resourceVersion (of the latest write). */
  resourceVersion(): string {
    return String(this.rv);
  }

  openWatches(resource?: Resource): number {
    return [...this.watches].filter((w) => resource === undefined || w.resource === resource).length;
  }

  /** Creates or replaces an object (ADDED or MODIFIED); returns it as stored. */
  apply(resource: Resource, object: KubeObject): KubeObject {
    const type = TYPES[resource];
    const namespace = type.namespaced ? (object.metadata.namespace ?? 'default') : undefined;
    const key = keyOf(namespace, object.metadata.name);
    const store = this.store(resource);
    const previous = store.get(key);
    this.rv++;
    const stored: KubeObject = {
      ...structuredClone(object),
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      metadata: {
        ...structuredClone(object.metadata),
        ...(namespace !== undefined && { namespace }),
        uid: previous?.metadata.uid ?? randomUUID(),
        creationTimestamp:
          previous?.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        resourceVersion: String(this.rv),
      },
    };
    store.set(key, stored);
    this.record({
      rv: this.rv,
      resource,
      type: previous ? 'MODIFIED' : 'ADDED',
      object: stored,
      ...(previous && { previous }),
    });
    return stored;
  }

  /** Deletes an object (DELETED, carrying the object at a new resourceVersion); false if absent. */
  remove(resource: Resource, namespace: string | undefined, name: string): boolean {
    const key = keyOf(TYPES[resource].namespaced ? (namespace ?? 'default') : undefined, name);
    const store = this.store(resource);
    const previous = store.get(key);
    if (!previous) return false;
    store.delete(key);
    this.rv++;
    const object = { ...previous, metadata: { ...previous.metadata, resourceVersion: String(this.rv) } };
    this.record({ rv: this.rv, resource, type: 'DELETED', object, previous });
    return true;
  }

  get(resource: Resource, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.store(resource).get(
      keyOf(TYPES[resource].namespaced ? (namespace ?? 'default') : undefined, name),
    );
  }

  /** Sends a BOOKMARK at the current resourceVersion on every watch that allowed them; returns how many. */
  bookmark(): number {
    let sent = 0;
    for (const w of this.watches) {
      if (!w.bookmarks || w.table) continue;
      const type = TYPES[w.resource];
      writeEvent(w.res, 'BOOKMARK', {
        kind: type.kind,
        apiVersion: apiVersionOf(type),
        metadata: { resourceVersion: String(this.rv) },
      });
      sent++;
    }
    return sent;
  }

  /** Forgets the history: watches or continue tokens from before now get 410. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history = [];
  }

  /** Compacts, and ends every open watch with an ERROR event of code 410, as a lagging watch cache does. */
  expireWatches(): void {
    this.compact();
    for (const w of [...this.watches]) {
      writeEvent(w.res, 'ERROR', goneStatus(`too old resource version: ${this.rv}`));
      this.endWatch(w);
    }
  }

  /** Ends every open watch cleanly, as the server does when a watch's timeout expires. */
  endWatches(): void {
    for (const w of [...this.watches]) this.endWatch(w);
  }

  /** The API server goes away: the port refuses connections and open connections are cut. */
  async down(): Promise<void> {
    for (const w of [...this.watches]) {
      clearTimeout(w.timer);
      this.watches.delete(w);
    }
    this.hung.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Back on the same port, with the same objects and history. */
  async up(): Promise<void> {
    this.server = this.createServer();
    await this.listen(this.port);
  }

  /** Writes a kubeconfig for this server; returns its path. */
  kubeconfig(dir: string, { context = 'standin', file }: { context?: string; file?: string } = {}): string {
    const path = join(dir, file ?? `${context}.kubeconfig`);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: ${context}`,
        '  cluster:',
        `    server: ${this.url}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        `- name: ${context}`,
        '  user:',
        '    token: standin-token',
        'contexts:',
        `- name: ${context}`,
        '  context:',
        `    cluster: ${context}`,
        `    user: ${context}`,
        `current-context: ${context}`,
        '',
      ].join('\n'),
    );
    return path;
  }

  async stop(): Promise<void> {
    await this.down();
  }

  private store(resource: Resource): Map<string, KubeObject> {
    const store = this.objects.get(resource);
    if (!store) throw new Error(`unknown resource ${resource}`);
    return store;
  }

  private record(event: HistoryEvent): void {
    this.history.push(event);
    for (const w of this.watches) {
      if (w.resource !== event.resource || !inNamespace(event.object, w.namespace)) continue;
      this.send(w, event.type, event.object);
    }
  }

  private send(w: Watch, type: string, object: KubeObject): void {
    writeEvent(w.res, type, w.table ? table(w.resource, [object], String(this.rv), 'Metadata') : object);
  }

  private endWatch(w: Watch): void {
    clearTimeout(w.timer);
    this.watches.delete(w);
    w.res.end();
  }

  private createServer(): Server {
    return createServer((req, res) => {
      try {
        this.handle(req, res);
      } catch (err) {
        sendStatus(res, 500, 'InternalError', err instanceof Error ? err.message : String(err));
      }
    });
  }

  private async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://standin');
    const query = Object.fromEntries(url.searchParams);
    const accept = req.headers.accept ?? '';
    const recorded = { method: req.method ?? 'GET', path: url.pathname, query, accept };
    this.requests.push(recorded);
    this.onRequest?.(recorded);
    if (this.hang) {
      this.hung.add(res);
      return;
    }
    if (req.method !== 'GET')
      return sendStatus(res, 405, 'MethodNotAllowed', 'the stand-in is read-only over HTTP');
    const discovery = this.discovery(url.pathname);
    if (discovery) return sendJson(res, 200, discovery);
    const route = parseResourcePath(url.pathname);
    if (!route) return sendStatus(res, 404, 'NotFound', 'the server could not find the requested resource');
    const wantsTable = /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept);
    if (route.name !== undefined) {
      const object = this.store(route.resource).get(keyOf(route.namespace, route.name));
      if (!object)
        return sendStatus(res, 404, 'NotFound', `${route.resource} "${route.name}" not found`, {
          name: route.name,
          kind: route.resource,
        });
      return sendJson(
        res,
        200,
        wantsTable ? table(route.resource, [object], String(this.rv), 'Metadata') : object,
      );
    }
    if (query.watch === 'true' || query.watch === '1') return this.watch(route, query, wantsTable, res);
    return this.list(route, query, wantsTable, res);
  }

  private list(route: Route, query: Record<string, string>, wantsTable: boolean, res: ServerResponse): void {
    let at = this.rv;
    let after = '';
    if (query.continue) {
      const token = decodeContinue(query.continue);
      if (!token) return sendStatus(res, 400, 'BadRequest', 'invalid continue token');
      if (token.rv < this.compactedRv)
        return sendStatus(
          res,
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      at = token.rv;
      after = token.after;
    } else if (query.resourceVersion && query.resourceVersionMatch === 'Exact') {
      at = Number(query.resourceVersion);
      if (!(at >= this.compactedRv && at <= this.rv))
        return sendStatus(
          res,
          410,
          'Expired',
          `too old resource version: ${query.resourceVersion} (${this.compactedRv})`,
        );
    }
    const all = [...this.stateAt(route.resource, at)]
      .filter(([, o]) => inNamespace(o, route.namespace))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const start = after ? all.findIndex(([k]) => k > after) : 0;
    const rest = start < 0 ? [] : all.slice(start);
    const limit = Number(query.limit) > 0 ? Number(query.limit) : rest.length;
    const page = rest.slice(0, limit);
    const more = rest.length > page.length;
    const last = page[page.length - 1];
    const metadata = {
      resourceVersion: String(at),
      ...(more &&
        last && { continue: encodeContinue(at, last[0]), remainingItemCount: rest.length - page.length }),
    };
    const items = page.map(([, o]) => o);
    if (wantsTable) {
      const t = table(route.resource, items, String(at), query.includeObject ?? 'Metadata');
      return sendJson(res, 200, { ...t, metadata });
    }
    const type = TYPES[route.resource];
    sendJson(res, 200, {
      kind: `${type.kind}List`,
      apiVersion: apiVersionOf(type),
      metadata,
      // The real server leaves kind and apiVersion off list items.
      items: items.map(({ kind: _kind, apiVersion: _apiVersion, ...rest }) => rest),
    });
  }

  private watch(route: Route, query: Record<string, string>, wantsTable: boolean, res: ServerResponse): void {
    const from = query.resourceVersion ?? '';
    const fromRv = from === '' || from === '0' ? undefined : Number(from);
    if (fromRv !== undefined && (!Number.isFinite(fromRv) || fromRv < this.compactedRv)) {
      const message = `too old resource version: ${from} (${this.compactedRv})`;
      if (this.options.goneAs === 'http') return sendStatus(res, 410, 'Expired', message);
      res.writeHead(200, { 'content-type': 'application/json' });
      writeEvent(res, 'ERROR', goneStatus(message));
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const timeoutSeconds = Number(query.timeoutSeconds);
    const watch: Watch = {
      resource: route.resource,
      namespace: route.namespace,
      res,
      bookmarks: query.allowWatchBookmarks === 'true' || query.allowWatchBookmarks === '1',
      table: wantsTable,
      timer:
        timeoutSeconds > 0 && this.honourWatchTimeouts
          ? setTimeout(() => this.endWatch(watch), timeoutSeconds * 1000)
          : undefined,
    };
    if (fromRv === undefined) {
      for (const o of this.store(route.resource).values())
        if (inNamespace(o, route.namespace)) this.send(watch, 'ADDED', o);
    } else {
      for (const e of this.history)
        if (e.rv > fromRv && e.resource === route.resource && inNamespace(e.object, route.namespace))
          this.send(watch, e.type, e.object);
    }
    this.watches.add(watch);
    res.once('close', () => {
      clearTimeout(watch.timer);
      this.watches.delete(watch);
    });
  }

  /** The objects of `resource` as they were at version `at`, rebuilt by undoing later history. */
  private stateAt(resource: Resource, at: number): Map<string, KubeObject> {
    const state = new Map(this.store(resource));
    for (let i = this.history.length - 1; i >= 0; i--) {
      const e = this.history[i];
      if (!e || e.rv <= at) break;
      if (e.resource !== resource) continue;
      const key = keyOf(e.object.metadata.namespace, e.object.metadata.name);
      if (e.type === 'ADDED') state.delete(key);
      else if (e.previous) state.set(key, e.previous);
    }
    return state;
  }

  private discovery(path: string): object | undefined {
    const resources = (group: '' | 'discovery.k8s.io'): object[] =>
      RESOURCES.filter((r) => TYPES[r].group === group).map((r) => ({
        name: r,
        singularName: TYPES[r].singular,
        namespaced: TYPES[r].namespaced,
        kind: TYPES[r].kind,
        verbs: ['get', 'list', 'watch'],
        ...(TYPES[r].shortNames.length > 0 && { shortNames: [...TYPES[r].shortNames] }),
      }));
    switch (path) {
      case '/api':
        return {
          kind: 'APIVersions',
          versions: ['v1'],
          serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.port}` }],
        };
      case '/apis':
        return {
          kind: 'APIGroupList',
          apiVersion: 'v1',
          groups: [
            {
              name: 'discovery.k8s.io',
              versions: [{ groupVersion: 'discovery.k8s.io/v1', version: 'v1' }],
              preferredVersion: { groupVersion: 'discovery.k8s.io/v1', version: 'v1' },
            },
          ],
        };
      case '/api/v1':
        return { kind: 'APIResourceList', groupVersion: 'v1', resources: resources('') };
      case '/apis/discovery.k8s.io/v1':
        return {
          kind: 'APIResourceList',
          apiVersion: 'v1',
          groupVersion: 'discovery.k8s.io/v1',
          resources: resources('discovery.k8s.io'),
        };
      case '/version':
        return {
          major: '1',
          minor: '30',
          gitVersion: 'v1.30.0-portolan-standin',
          gitCommit: 'standin',
          gitTreeState: 'clean',
          buildDate: '2024-01-01T00:00:00Z',
          goVersion: 'go1.22',
          compiler: 'gc',
          platform: 'linux/amd64',
        };
      default:
        return undefined;
    }
  }
}

interface Route {
  readonly resource: Resource;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

/** `/api/v1[/namespaces/NS]/RESOURCE[/NAME]` and `/apis/discovery.k8s.io/v1[/namespaces/NS]/endpointslices[/NAME]`. */
function parseResourcePath(path: string): Route | undefined {
  const m =
    /^\/(?:api\/v1|apis\/(discovery\.k8s\.io)\/v1)(?:\/namespaces\/([^/]+))?\/([a-z]+)(?:\/([^/]+))?$/.exec(
      path,
    );
  if (!m) return undefined;
  const [, group = '', namespace, resource = '', name] = m;
  if (!RESOURCES.includes(resource as Resource)) return undefined;
  const type = TYPES[resource as Resource];
  if (type.group !== group || (namespace !== undefined && !type.namespaced)) return undefined;
  return { resource: resource as Resource, namespace, name };
}

function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

function inNamespace(o: KubeObject, namespace: string | undefined): boolean {
  return namespace === undefined || o.metadata.namespace === namespace;
}

function encodeContinue(rv: number, after: string): string {
  return Buffer.from(JSON.stringify({ rv, after })).toString('base64url');
}

function decodeContinue(token: string): { rv: number; after: string } | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      rv?: unknown;
      after?: unknown;
    };
    if (typeof parsed.rv === 'number' && typeof parsed.after === 'string')
      return { rv: parsed.rv, after: parsed.after };
  } catch {
    // fall through
  }
  return undefined;
}

function goneStatus(message: string): object {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Expired',
    code: 410,
  };
}

function writeEvent(res: ServerResponse, type: string, object: unknown): void {
  if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendStatus(
  res: ServerResponse,
  code: number,
  reason: string,
  message: string,
  details?: object,
): void {
  sendJson(res, code, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details && { details }),
    code,
  });
}

// Server-side printing: the columns `kubectl get` shows, as the real API server's printers fill them.

interface Column {
  readonly name: string;
  readonly type: string;
  readonly format?: string;
  readonly priority?: number;
  readonly cell: (o: KubeObject) => string | number;
}

const AGE: Column = { name: 'Age', type: 'string', cell: (o) => age(o.metadata.creationTimestamp) };

const COLUMNS: Readonly<Record<Resource, readonly Column[]>> = {
  services: [
    { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name },
    { name: 'Type', type: 'string', cell: (o) => str(spec(o).type) || 'ClusterIP' },
    { name: 'Cluster-IP', type: 'string', cell: (o) => str(spec(o).clusterIP) || '<none>' },
    {
      name: 'External-IP',
      type: 'string',
      cell: (o) => (spec(o).type === 'ExternalName' ? str(spec(o).externalName) : '<none>'),
    },
    {
      name: 'Port(s)',
      type: 'string',
      cell: (o) =>
        records(spec(o).ports)
          .map((p) => `${String(p.port)}/${str(p.protocol) || 'TCP'}`)
          .join(',') || '<none>',
    },
    AGE,
    { name: 'Selector', type: 'string', priority: 1, cell: (o) => selector(spec(o).selector) },
  ],
  endpointslices: [
    { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name },
    { name: 'AddressType', type: 'string', cell: (o) => str(o.addressType) },
    {
      name: 'Ports',
      type: 'string',
      cell: (o) =>
        records(o.ports)
          .map((p) => String(p.port))
          .join(',') || '<unset>',
    },
    {
      name: 'Endpoints',
      type: 'string',
      cell: (o) => {
        const addresses = records(o.endpoints).flatMap((e) =>
          Array.isArray(e.addresses) ? e.addresses.map(String) : [],
        );
        if (addresses.length === 0) return '<unset>';
        const shown = addresses.slice(0, 3).join(',');
        return addresses.length > 3 ? `${shown} + ${addresses.length - 3} more...` : shown;
      },
    },
    AGE,
  ],
  nodes: [
    { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name },
    { name: 'Status', type: 'string', cell: () => 'Ready' },
    { name: 'Roles', type: 'string', cell: () => '<none>' },
    AGE,
    { name: 'Version', type: 'string', cell: () => 'v1.30.0' },
  ],
  pods: [
    { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name },
    { name: 'Ready', type: 'string', cell: () => '1/1' },
    { name: 'Status', type: 'string', cell: () => 'Running' },
    { name: 'Restarts', type: 'integer', cell: () => 0 },
    AGE,
  ],
};

function table(
  resource: Resource,
  objects: readonly KubeObject[],
  rv: string,
  includeObject: string,
): object {
  const columns = COLUMNS[resource];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: rv },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.name,
      priority: c.priority ?? 0,
    })),
    rows: objects.map((o) => ({
      cells: columns.map((c) => c.cell(o)),
      ...(includeObject === 'Object' && { object: o }),
      ...(includeObject === 'Metadata' && {
        object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
      }),
    })),
  };
}

function spec(o: KubeObject): Record<string, unknown> {
  const s = o.spec;
  return typeof s === 'object' && s !== null ? (s as Record<string, unknown>) : {};
}

function records(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v)
    ? v.filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null)
    : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function selector(v: unknown): string {
  if (typeof v !== 'object' || v === null) return '<none>';
  const parts = Object.entries(v).map(([k, x]) => `${k}=${String(x)}`);
  return parts.length > 0 ? parts.join(',') : '<none>';
}

function age(timestamp: string | undefined): string {
  const seconds = timestamp ? Math.max(0, Math.floor((Date.now() - Date.parse(timestamp)) / 1000)) : 0;
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  return `${Math.floor(seconds / 3600)}h`;
}
