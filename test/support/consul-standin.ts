// A stand-in Consul agent over node:http for tests and benchmarks, following Consul's HTTP API
// documentation for the parts Portolan uses:
//
//   GET /v1/catalog/services            name → tags; blocking (index, wait); X-Consul-Index
//   GET /v1/health/service/:name        [{Node, Service, Checks}]; blocking; ?passing
//   PUT /v1/catalog/register            node (+ service, + checks), as an external registration
//   PUT /v1/catalog/deregister          node, service or check
//   PUT /v1/agent/service/register      service on the agent's node, with Check/Checks (TTL)
//   PUT /v1/agent/service/deregister/:id
//   PUT /v1/agent/service/maintenance/:id?enable=&reason=   (`_service_maintenance:ID` check)
//   PUT /v1/agent/maintenance?enable=&reason=               (`_node_maintenance` check)
//   PUT /v1/agent/check/pass|warn|fail/:id?note=, PUT /v1/agent/check/update/:id {Status, Output}
//   GET /v1/status/leader
//
// Blocking queries as documented: with `index` > 0 a read waits until the result's index passes it
// or `wait` (default 5m, at most 10m, plus up to wait/16 of jitter) runs out. Every write bumps one
// raft index; the catalog's index is the last write to the service table, a service's index the last
// write to its instances or their (node or service) checks, so one service's change wakes only its
// watchers. Headers: X-Consul-Index, X-Consul-KnownLeader, X-Consul-LastContact. `?dc=` other than
// the agent's datacenter answers 500 "No path to datacenter". With an ACL token configured, requests
// carry it in X-Consul-Token (or `Authorization: Bearer`, or `?token=`): a wrong token gets 403 "ACL
// not found"; no token reads as anonymous, which sees nothing (an empty result with
// X-Consul-Results-Filtered-By-ACLs: true) and may not write (403 "Permission denied"). New checks
// start critical unless given a Status; re-registering a service keeps its checks' status.
//
// Like an agent, it closes connections from one client IP beyond `limits.http_max_conns_per_client`
// (default 200) as soon as they are accepted: one blocking watch per service needs a higher limit.
//
// Fault injection, on reads only (writes keep working so a test can change state mid-fault):
// `failReads` (e.g. 500s; pending blocking reads fail too), `hang` (nothing is answered until
// `unhang`), `refuseConnections`/`acceptConnections` (the listener is closed, open connections are
// cut), `resetIndex` (a snapshot restore: the index goes backwards and blocking reads wake),
// `zeroIndex` (X-Consul-Index: 0), `emptyCatalog` and `emptyHealth` (partial answers), `malformed`,
// `failHealth` (one service's health reads fail, e.g. its query hits a broken server or an ACL).
//
// Not covered: ACL policies (one all-powerful token), namespaces/partitions, filter expressions,
// `near`, tag filters, consistency modes, hash-based blocking, agent check runners (HTTP/TCP checks
// never run; TTLs never expire), anti-entropy between agent and catalog (one store).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type CheckStatus = 'passing' | 'warning' | 'critical';

export interface StandinOptions {
  readonly datacenter?: string;
  /** The agent's own node (where agent/service/register puts services). */
  readonly nodeName?: string;
  readonly nodeAddress?: string;
  /** When set, ACLs are on and this is the one valid token. */
  readonly aclToken?: string;
  /** Register Consul's own `consul` service on the agent node, as a server agent has. */
  readonly consulService?: boolean;
  /**
   * Consul's `limits.http_max_conns_per_client` (default 200): connections from one client IP
   * beyond it are closed as soon as they are accepted.
   */
  readonly maxConnsPerClient?: number;
  readonly port?: number;
}

/** A service instance as tests register it (Consul's JSON field names). */
export interface InstanceSpec {
  readonly ID?: string;
  readonly Name: string;
  readonly Tags?: readonly string[];
  readonly Address?: string;
  readonly Port?: number;
  readonly Meta?: Readonly<Record<string, string>>;
  readonly Weights?: { readonly Passing: number; readonly Warning: number };
}

export interface RequestCounts {
  total: number;
  catalog: number;
  health: number;
  writes: number;
  /** Connections closed at once for exceeding maxConnsPerClient. */
  refusedOverLimit: number;
}

interface NodeRecord {
  id: string;
  name: string;
  address: string;
  datacenter: string;
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

interface ServiceRecord {
  node: string;
  id: string;
  name: string;
  tags: string[];
  address: string;
  meta: Record<string, string>;
  port: number;
  weights: { Passing: number; Warning: number };
  createIndex: number;
  modifyIndex: number;
}

interface CheckRecord {
  node: string;
  checkId: string;
  name: string;
  status: CheckStatus;
  notes: string;
  output: string;
  serviceId: string;
  type: string;
  createIndex: number;
  modifyIndex: number;
}

interface PendingRead {
  readonly resource: string;
  readonly minIndex: number;
  readonly res: ServerResponse;
  readonly answer: () => void;
  timer?: NodeJS.Timeout;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_WAIT_MS = 5 * 60_000;
const MAX_WAIT_MS = 10 * 60_000;

export class ConsulStandin {
  readonly datacenter: string;
  readonly agentNode: string;
  readonly counts: RequestCounts = { total: 0, catalog: 0, health: 0, writes: 0, refusedOverLimit: 0 };
  /** Reads per service name on /v1/health/service. */
  readonly healthCounts = new Map<string, number>();
  /** Blocking reads answered early because a write moved their index, by resource (`catalog`, `health:NAME`). */
  readonly wokenByChange = new Map<string, number>();

  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private port = 0;
  private readonly aclToken: string | undefined;
  /** Consul's limits.http_max_conns_per_client; tests may change it as an operator would. */
  maxConnsPerClient: number;

  private raftIndex = 1;
  private catalogIndex = 1;
  private readonly serviceIndex = new Map<string, number>();
  private readonly nodes = new Map<string, NodeRecord>();
  private readonly services = new Map<string, ServiceRecord>();
  private readonly checks = new Map<string, CheckRecord>();
  // Secondary indexes, so a read costs what it returns (1,000 services must stay cheap).
  private readonly serviceKeysByName = new Map<string, Set<string>>();
  private readonly serviceKeysByNode = new Map<string, Set<string>>();
  /** Check keys by owner: key(node, serviceId), with serviceId '' for node checks. */
  private readonly checkKeysByOwner = new Map<string, Set<string>>();

  private readonly pending = new Set<PendingRead>();
  private readonly hung = new Set<() => void>();
  private failure: { status: number; message: string } | undefined;
  private hanging = false;
  private zeroIndexFault = false;
  private emptyCatalogFault = false;
  private readonly emptyHealthFault = new Set<string>();
  private readonly healthFailures = new Map<string, { status: number; message: string }>();
  private malformedFault = false;

  private constructor(private readonly options: StandinOptions) {
    this.datacenter = options.datacenter ?? 'dc1';
    this.agentNode = options.nodeName ?? 'agent-1';
    this.aclToken = options.aclToken;
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 0; // like Consul's agent: idle keep-alive connections stay open
    this.maxConnsPerClient = options.maxConnsPerClient ?? 200;
    const perClient = new Map<string, number>();
    this.server.on('connection', (socket) => {
      const client = socket.remoteAddress ?? '';
      const open = perClient.get(client) ?? 0;
      if (open >= this.maxConnsPerClient) {
        this.counts.refusedOverLimit++;
        socket.destroy();
        return;
      }
      perClient.set(client, open + 1);
      this.sockets.add(socket);
      socket.on('close', () => {
        this.sockets.delete(socket);
        perClient.set(client, (perClient.get(client) ?? 1) - 1);
      });
    });
  }

  static async start(options: StandinOptions = {}): Promise<ConsulStandin> {
    const standin = new ConsulStandin(options);
    standin.registerNode({ Node: standin.agentNode, Address: options.nodeAddress ?? '127.0.0.1' });
    standin.upsertCheck({
      node: standin.agentNode,
      checkId: 'serfHealth',
      name: 'Serf Health Status',
      status: 'passing',
      notes: '',
      output: 'Agent alive and reachable',
      serviceId: '',
      type: '',
    });
    if (options.consulService ?? true)
      standin.upsertService(standin.agentNode, { ID: 'consul', Name: 'consul', Port: 8300 });
    await standin.listen(options.port ?? 0);
    return standin;
  }

  /** `http://127.0.0.1:PORT` */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get index(): number {
    return this.raftIndex;
  }

  async stop(): Promise<void> {
    this.dropPending();
    this.hung.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      for (const s of this.sockets) s.destroy();
    });
  }

  // ---- direct test API (the same operations the HTTP API performs) ----

  /**
   * Registers (or replaces) an instance on `node` (default: the agent's), creating the node, with a
   * TTL check `service:ID` in state `status`.
   */
  register(
    spec: InstanceSpec,
    {
      node = this.agentNode,
      nodeAddress = '127.0.0.1',
      status = 'passing',
    }: { node?: string; nodeAddress?: string; status?: CheckStatus } = {},
  ): string {
    if (!this.nodes.has(node)) this.registerNode({ Node: node, Address: nodeAddress });
    const id = spec.ID ?? spec.Name;
    this.upsertService(node, spec, status);
    return id;
  }

  deregister(serviceId: string, node = this.agentNode): void {
    this.removeService(node, serviceId);
  }

  /** Sets the status of a check; the default check of a service registered here is `service:ID`. */
  setCheck(checkId: string, status: CheckStatus, node = this.agentNode): void {
    const check = this.checks.get(key(node, checkId));
    if (!check) throw new Error(`no check ${checkId} on ${node}`);
    this.upsertCheck({ ...check, status });
  }

  setServiceMaintenance(serviceId: string, enable: boolean, node = this.agentNode, reason = ''): void {
    this.maintenance(node, serviceId, enable, reason);
  }

  /** Registers many instances in one write (one index bump), e.g. for scale tests. */
  registerMany(specs: readonly InstanceSpec[], node = this.agentNode): void {
    for (const spec of specs) this.putService(node, spec, 'passing', this.raftIndex + 1);
    this.commit(
      specs.map((s) => s.Name),
      true,
    );
  }

  /** Fails every read with `status` (Consul's 500s: "No cluster leader", RPC errors); undefined clears. */
  failReads(fault: { status: number; message: string } | undefined): void {
    this.failure = fault;
    if (fault) for (const p of [...this.pending]) this.finish(p);
  }

  /** Stops answering reads (new and pending) until unhang(). */
  hang(): void {
    this.hanging = true;
  }

  unhang(): void {
    this.hanging = false;
    const resumes = [...this.hung];
    this.hung.clear();
    for (const resume of resumes) resume();
  }

  /** Closes the listener and cuts open connections: clients get ECONNREFUSED / ECONNRESET. */
  async refuseConnections(): Promise<void> {
    this.dropPending();
    this.hung.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      for (const s of this.sockets) s.destroy();
    });
  }

  /** Listens again on the same port. */
  async acceptConnections(): Promise<void> {
    await this.listen(this.port);
  }

  /**
   * A snapshot restore: the raft index goes back to `to` (every result index with it) and pending
   * blocking reads wake and answer with the lower index, as Consul's abandoned watches do.
   */
  resetIndex(to: number): void {
    this.raftIndex = Math.max(1, to);
    this.catalogIndex = Math.min(this.catalogIndex, this.raftIndex);
    for (const [name, i] of this.serviceIndex) this.serviceIndex.set(name, Math.min(i, this.raftIndex));
    for (const p of [...this.pending]) this.finish(p);
  }

  /** Answers with X-Consul-Index: 0 (a Consul bug the docs warn about) while on. */
  zeroIndex(on: boolean): void {
    this.zeroIndexFault = on;
  }

  /** catalog/services answers `{}` while on (a wiped or ACL-filtered catalog). */
  emptyCatalog(on: boolean): void {
    this.emptyCatalogFault = on;
    this.commit([], true); // the answer changes, so its index moves (and blocked reads wake)
  }

  /** health/service/NAME answers `[]` while on, though the catalog lists NAME (a partial answer). */
  emptyHealth(name: string, on: boolean): void {
    if (on) this.emptyHealthFault.add(name);
    else this.emptyHealthFault.delete(name);
    this.commit([name], false);
  }

  /** health/service/NAME reads fail with `fault` (pending ones too); undefined clears. */
  failHealth(name: string, fault: { status: number; message: string } | undefined): void {
    if (fault) this.healthFailures.set(name, fault);
    else this.healthFailures.delete(name);
    for (const p of [...this.pending]) if (p.resource === `health:${name}`) this.finish(p);
  }

  /** Reads answer well-formed JSON of the wrong shape while on. */
  malformed(on: boolean): void {
    this.malformedFault = on;
    for (const p of [...this.pending]) this.finish(p);
  }

  resetCounts(): void {
    this.counts.total = this.counts.catalog = this.counts.health = this.counts.writes = 0;
    this.counts.refusedOverLimit = 0;
    this.healthCounts.clear();
    this.wokenByChange.clear();
  }

  /** Blocking reads currently held open. */
  get pendingReads(): number {
    return this.pending.size;
  }

  /**
   * Whether a blocking read of `resource` (`catalog`, `health:NAME`) is held open: its reader has
   * taken the latest answer and asked again (a blocking watch asks only once it has).
   */
  isBlocking(resource: string): boolean {
    for (const p of this.pending) if (p.resource === resource) return true;
    return false;
  }

  /** The service names the catalog lists. */
  catalogNames(): string[] {
    return Object.keys(this.catalogServices());
  }

  // ---- HTTP ----

  private async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://standin');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.counts.total++;
      try {
        this.route(req.method ?? 'GET', url, Buffer.concat(chunks).toString('utf8'), req, res);
      } catch (err) {
        const status = err instanceof HttpError ? err.status : 500;
        sendText(res, status, err instanceof Error ? err.message : String(err));
      }
    });
  }

  private route(method: string, url: URL, body: string, req: IncomingMessage, res: ServerResponse): void {
    const path = url.pathname;
    const token = tokenOf(req, url);
    if (this.aclToken !== undefined && token !== '' && token !== this.aclToken)
      throw new HttpError(403, 'ACL not found');
    const anonymous = this.aclToken !== undefined && token === '';
    const dc = url.searchParams.get('dc');
    if (dc && dc !== this.datacenter) throw new HttpError(500, 'No path to datacenter');

    if (method === 'GET' && path === '/v1/catalog/services') {
      this.counts.catalog++;
      return this.read(url, res, 'catalog', anonymous);
    }
    const health = /^\/v1\/health\/service\/([^/]+)$/.exec(path);
    if (method === 'GET' && health?.[1]) {
      const name = decodeURIComponent(health[1]);
      this.counts.health++;
      this.healthCounts.set(name, (this.healthCounts.get(name) ?? 0) + 1);
      return this.read(url, res, `health:${name}`, anonymous);
    }
    if (method === 'GET' && path === '/v1/status/leader') return sendJson(res, 200, '127.0.0.1:8300');

    if (method !== 'PUT' && method !== 'POST') throw new HttpError(405, `method ${method} not allowed`);
    if (anonymous) throw new HttpError(403, 'Permission denied');
    this.counts.writes++;
    this.write(path, url, body);
    sendJson(res, 200, path.startsWith('/v1/catalog/') ? true : null);
  }

  private write(path: string, url: URL, body: string): void {
    let m: RegExpExecArray | null;
    if (path === '/v1/agent/service/register') {
      const def = decode(body);
      const name = str(def.Name);
      if (!name) throw new HttpError(400, 'Missing service name');
      const id = str(def.ID) || name;
      this.upsertService(
        this.agentNode,
        {
          ID: id,
          Name: name,
          Tags: strList(def.Tags),
          Address: str(def.Address),
          Port: num(def.Port),
          Meta: strMap(def.Meta),
          ...(isObj(def.Weights) && {
            Weights: { Passing: num(def.Weights.Passing) || 1, Warning: num(def.Weights.Warning) },
          }),
        },
        undefined,
        agentChecks(id, name, def),
      );
      return;
    }
    if ((m = /^\/v1\/agent\/service\/deregister\/(.+)$/.exec(path))) {
      const id = decodeURIComponent(m[1] ?? '');
      if (!this.services.has(key(this.agentNode, id))) throw new HttpError(404, `Unknown service ID "${id}"`);
      return this.removeService(this.agentNode, id);
    }
    if ((m = /^\/v1\/agent\/service\/maintenance\/(.+)$/.exec(path))) {
      const id = decodeURIComponent(m[1] ?? '');
      if (!this.services.has(key(this.agentNode, id))) throw new HttpError(404, `Unknown service ID "${id}"`);
      return this.maintenance(this.agentNode, id, enableParam(url), url.searchParams.get('reason') ?? '');
    }
    if (path === '/v1/agent/maintenance')
      return this.maintenance(this.agentNode, '', enableParam(url), url.searchParams.get('reason') ?? '');
    if ((m = /^\/v1\/agent\/check\/(pass|warn|fail|update)\/(.+)$/.exec(path))) {
      const verb = m[1];
      const id = decodeURIComponent(m[2] ?? '');
      const check = this.checks.get(key(this.agentNode, id));
      if (!check) throw new HttpError(404, `Unknown check ID "${id}"`);
      if (check.type !== 'ttl') throw new HttpError(500, `CheckID "${id}" does not have associated TTL`);
      let status: CheckStatus;
      let output = url.searchParams.get('note') ?? '';
      if (verb === 'update') {
        const update = decode(body);
        status = checkStatus(update.Status);
        output = str(update.Output);
      } else status = verb === 'pass' ? 'passing' : verb === 'warn' ? 'warning' : 'critical';
      return this.upsertCheck({ ...check, status, output });
    }
    if (path === '/v1/catalog/register') return this.catalogRegister(decode(body));
    if (path === '/v1/catalog/deregister') return this.catalogDeregister(decode(body));
    throw new HttpError(404, `Unsupported path ${path}`);
  }

  private catalogRegister(def: Record<string, unknown>): void {
    const node = str(def.Node);
    const address = str(def.Address);
    if (!node || !address) throw new HttpError(400, 'Must provide node and address');
    if (def.Datacenter && str(def.Datacenter) !== this.datacenter)
      throw new HttpError(500, 'No path to datacenter');
    if (!this.nodes.has(node) || def.SkipNodeUpdate !== true)
      this.registerNode({ Node: node, Address: address, Meta: strMap(def.NodeMeta), ID: str(def.ID) });
    if (isObj(def.Service)) {
      const s = def.Service;
      const name = str(s.Service);
      if (!name) throw new HttpError(400, 'Must provide service name');
      this.upsertService(
        node,
        {
          ID: str(s.ID) || name,
          Name: name,
          Tags: strList(s.Tags),
          Address: str(s.Address),
          Port: num(s.Port),
          Meta: strMap(s.Meta),
          ...(isObj(s.Weights) && {
            Weights: { Passing: num(s.Weights.Passing) || 1, Warning: num(s.Weights.Warning) },
          }),
        },
        undefined,
        [],
      );
    }
    const checks: unknown[] = [
      ...(isObj(def.Check) ? [def.Check] : []),
      ...(Array.isArray(def.Checks) ? (def.Checks as unknown[]) : []),
    ];
    for (const c of checks) {
      if (!isObj(c)) continue;
      this.upsertCheck({
        node,
        checkId: str(c.CheckID) || str(c.Name),
        name: str(c.Name),
        status: c.Status === undefined ? 'critical' : checkStatus(c.Status),
        notes: str(c.Notes),
        output: str(c.Output),
        serviceId: str(c.ServiceID),
        type: '',
      });
    }
  }

  private catalogDeregister(def: Record<string, unknown>): void {
    const node = str(def.Node);
    if (!node) throw new HttpError(400, 'Must provide node');
    if (def.ServiceID) return this.removeService(node, str(def.ServiceID));
    if (def.CheckID) {
      const check = this.checks.get(key(node, str(def.CheckID)));
      if (!check) return;
      this.dropCheck(check);
      return this.commit(this.affectedBy(check), false);
    }
    const names = this.servicesOn(node).map((s) => s.name);
    for (const s of this.servicesOn(node)) this.dropService(s);
    for (const c of this.checksOf(node, '')) this.dropCheck(c);
    this.nodes.delete(node);
    this.commit(names, names.length > 0);
  }

  // ---- blocking reads ----

  private read(url: URL, res: ServerResponse, resource: string, anonymous: boolean): void {
    const indexParam = url.searchParams.get('index');
    const minIndex = indexParam === null ? 0 : Number(indexParam);
    if (!Number.isInteger(minIndex) || minIndex < 0) throw new HttpError(400, 'Invalid index');
    const waitParam = url.searchParams.get('wait');
    const waitMs = waitParam === null ? DEFAULT_WAIT_MS : Math.min(MAX_WAIT_MS, parseGoDuration(waitParam));
    const passingOnly = url.searchParams.has('passing');
    const pending: PendingRead = {
      resource,
      minIndex,
      res,
      answer: () => this.answer(res, resource, anonymous, passingOnly),
    };
    if (this.hanging) return this.holdHung(pending);
    if (
      this.failure ||
      this.healthFailure(resource) ||
      minIndex === 0 ||
      this.resourceIndex(resource) > minIndex
    )
      return this.finish(pending);
    // Consul adds up to wait/16 of random jitter to spread wake-ups.
    pending.timer = setTimeout(() => this.finish(pending), waitMs + Math.random() * (waitMs / 16));
    this.pending.add(pending);
    res.on('close', () => {
      clearTimeout(pending.timer);
      this.pending.delete(pending);
    });
  }

  private finish(p: PendingRead): void {
    clearTimeout(p.timer);
    this.pending.delete(p);
    if (p.res.writableEnded || p.res.destroyed) return;
    if (this.hanging) return this.holdHung(p);
    const failure = this.failure ?? this.healthFailure(p.resource);
    if (failure) return sendText(p.res, failure.status, failure.message);
    p.answer();
  }

  private healthFailure(resource: string): { status: number; message: string } | undefined {
    return resource.startsWith('health:')
      ? this.healthFailures.get(resource.slice('health:'.length))
      : undefined;
  }

  private holdHung(p: PendingRead): void {
    this.hung.add(() => this.finish(p));
  }

  private answer(res: ServerResponse, resource: string, anonymous: boolean, passingOnly: boolean): void {
    const headers: Record<string, string> = {
      'X-Consul-Index': String(this.zeroIndexFault ? 0 : this.resourceIndex(resource)),
      'X-Consul-KnownLeader': 'true',
      'X-Consul-LastContact': '0',
    };
    if (anonymous) headers['X-Consul-Results-Filtered-By-ACLs'] = 'true';
    let body: unknown;
    if (this.malformedFault) body = resource === 'catalog' ? ['not', 'an', 'object'] : { not: 'an array' };
    else if (resource === 'catalog') body = anonymous || this.emptyCatalogFault ? {} : this.catalogServices();
    else {
      const name = resource.slice('health:'.length);
      body = anonymous || this.emptyHealthFault.has(name) ? [] : this.healthEntries(name, passingOnly);
    }
    sendJson(res, 200, body, headers);
  }

  private resourceIndex(resource: string): number {
    if (resource === 'catalog') return Math.max(1, this.catalogIndex);
    return Math.max(1, this.serviceIndex.get(resource.slice('health:'.length)) ?? this.catalogIndex);
  }

  private dropPending(): void {
    for (const p of this.pending) clearTimeout(p.timer);
    this.pending.clear();
  }

  // ---- the store ----

  private catalogServices(): Record<string, string[]> {
    const tags = new Map<string, Set<string>>();
    for (const s of this.services.values()) {
      const set = tags.get(s.name) ?? new Set<string>();
      for (const t of s.tags) set.add(t);
      tags.set(s.name, set);
    }
    return Object.fromEntries([...tags.keys()].sort().map((n) => [n, [...(tags.get(n) ?? [])].sort()]));
  }

  private healthEntries(name: string, passingOnly: boolean): unknown[] {
    const instances = [...(this.serviceKeysByName.get(name) ?? [])]
      .map((k) => this.services.get(k))
      .filter((s): s is ServiceRecord => s !== undefined)
      .sort((a, b) => (a.node === b.node ? cmp(a.id, b.id) : cmp(a.node, b.node)));
    const out: unknown[] = [];
    for (const s of instances) {
      const node = this.nodes.get(s.node);
      if (!node) continue;
      const checks = [...this.checksOf(s.node, ''), ...this.checksOf(s.node, s.id)].sort((a, b) =>
        cmp(a.checkId, b.checkId),
      );
      if (passingOnly && checks.some((c) => c.status !== 'passing')) continue;
      out.push({
        Node: {
          ID: node.id,
          Node: node.name,
          Address: node.address,
          Datacenter: node.datacenter,
          TaggedAddresses: {
            lan: node.address,
            lan_ipv4: node.address,
            wan: node.address,
            wan_ipv4: node.address,
          },
          Meta: node.meta,
          CreateIndex: node.createIndex,
          ModifyIndex: node.modifyIndex,
        },
        Service: {
          ID: s.id,
          Service: s.name,
          Tags: s.tags,
          Address: s.address,
          Meta: s.meta,
          Port: s.port,
          Weights: s.weights,
          EnableTagOverride: false,
          Proxy: { Mode: '', MeshGateway: {}, Expose: {} },
          Connect: {},
          Datacenter: this.datacenter,
          CreateIndex: s.createIndex,
          ModifyIndex: s.modifyIndex,
        },
        Checks: checks.map((c) => ({
          Node: c.node,
          CheckID: c.checkId,
          Name: c.name,
          Status: c.status,
          Notes: c.notes,
          Output: c.output,
          ServiceID: c.serviceId,
          ServiceName: c.serviceId ? s.name : '',
          ServiceTags: c.serviceId ? s.tags : [],
          Type: c.type,
          Definition: {},
          CreateIndex: c.createIndex,
          ModifyIndex: c.modifyIndex,
        })),
      });
    }
    return out;
  }

  private registerNode(def: {
    Node: string;
    Address: string;
    Meta?: Record<string, string>;
    ID?: string;
  }): void {
    const prev = this.nodes.get(def.Node);
    const index = this.raftIndex + 1;
    this.nodes.set(def.Node, {
      id: def.ID || prev?.id || pseudoUuid(def.Node),
      name: def.Node,
      address: def.Address,
      datacenter: this.datacenter,
      meta: def.Meta ?? prev?.meta ?? {},
      createIndex: prev?.createIndex ?? index,
      modifyIndex: index,
    });
    this.commit(
      this.servicesOn(def.Node).map((s) => s.name),
      false,
    );
  }

  /**
   * Adds or replaces an instance with its checks. Agent registrations without checks get none;
   * `status`, when given, adds a TTL check `service:ID` in that state (a test shorthand).
   */
  private upsertService(
    node: string,
    spec: InstanceSpec,
    status?: CheckStatus,
    checks?: CheckRecord[],
  ): void {
    const id = spec.ID ?? spec.Name;
    const prevName = this.services.get(key(node, id))?.name;
    const index = this.raftIndex + 1;
    this.putService(node, spec, status, index);
    for (const c of checks ?? []) {
      const prev = this.checks.get(key(node, c.checkId));
      // Consul keeps a re-registered check's status and output.
      this.putCheck({
        ...c,
        node,
        ...(prev && { status: prev.status, output: prev.output }),
        createIndex: prev?.createIndex ?? index,
        modifyIndex: index,
      });
    }
    this.commit([spec.Name, ...(prevName && prevName !== spec.Name ? [prevName] : [])], true);
  }

  private putService(node: string, spec: InstanceSpec, status: CheckStatus | undefined, index: number): void {
    const id = spec.ID ?? spec.Name;
    const prev = this.services.get(key(node, id));
    this.putServiceRecord({
      node,
      id,
      name: spec.Name,
      tags: [...(spec.Tags ?? [])],
      address: spec.Address ?? '',
      meta: { ...(spec.Meta ?? {}) },
      port: spec.Port ?? 0,
      weights: spec.Weights ? { ...spec.Weights } : { Passing: 1, Warning: 1 },
      createIndex: prev?.createIndex ?? index,
      modifyIndex: index,
    });
    if (status && !this.checks.has(key(node, `service:${id}`)))
      this.putCheck({
        node,
        checkId: `service:${id}`,
        name: `Service '${spec.Name}' check`,
        status,
        notes: '',
        output: '',
        serviceId: id,
        type: 'ttl',
        createIndex: index,
        modifyIndex: index,
      });
  }

  private removeService(node: string, id: string): void {
    const s = this.services.get(key(node, id));
    if (!s) return;
    this.dropService(s);
    this.commit([s.name], true);
  }

  private upsertCheck(c: Omit<CheckRecord, 'createIndex' | 'modifyIndex'>): void {
    const prev = this.checks.get(key(c.node, c.checkId));
    const index = this.raftIndex + 1;
    const next = { ...c, createIndex: prev?.createIndex ?? index, modifyIndex: index };
    this.putCheck(next);
    this.commit(this.affectedBy(next), false);
  }

  private maintenance(node: string, serviceId: string, enable: boolean, reason: string): void {
    const checkId = serviceId ? `_service_maintenance:${serviceId}` : '_node_maintenance';
    if (!enable) {
      const check = this.checks.get(key(node, checkId));
      if (!check) return;
      this.dropCheck(check);
      return this.commit(this.affectedBy(check), false);
    }
    this.upsertCheck({
      node,
      checkId,
      name: serviceId ? 'Service Maintenance Mode' : 'Node Maintenance Mode',
      status: 'critical',
      notes:
        reason ||
        'Maintenance mode is enabled for this service, but no reason was provided. This is a default message.',
      output: '',
      serviceId,
      type: 'maintenance',
    });
  }

  private affectedBy(check: CheckRecord): string[] {
    if (check.serviceId === '') return this.servicesOn(check.node).map((s) => s.name);
    const s = this.services.get(key(check.node, check.serviceId));
    return s ? [s.name] : [];
  }

  private servicesOn(node: string): ServiceRecord[] {
    return [...(this.serviceKeysByNode.get(node) ?? [])]
      .map((k) => this.services.get(k))
      .filter((s): s is ServiceRecord => s !== undefined);
  }

  private checksOf(node: string, serviceId: string): CheckRecord[] {
    return [...(this.checkKeysByOwner.get(key(node, serviceId)) ?? [])]
      .map((k) => this.checks.get(k))
      .filter((c): c is CheckRecord => c !== undefined);
  }

  private putServiceRecord(s: ServiceRecord): void {
    const k = key(s.node, s.id);
    const prev = this.services.get(k);
    if (prev) this.serviceKeysByName.get(prev.name)?.delete(k);
    this.services.set(k, s);
    addTo(this.serviceKeysByName, s.name, k);
    addTo(this.serviceKeysByNode, s.node, k);
  }

  /** Removes an instance and its service checks. */
  private dropService(s: ServiceRecord): void {
    const k = key(s.node, s.id);
    this.services.delete(k);
    this.serviceKeysByName.get(s.name)?.delete(k);
    this.serviceKeysByNode.get(s.node)?.delete(k);
    for (const c of this.checksOf(s.node, s.id)) this.dropCheck(c);
  }

  private putCheck(c: CheckRecord): void {
    const k = key(c.node, c.checkId);
    this.checks.set(k, c);
    addTo(this.checkKeysByOwner, key(c.node, c.serviceId), k);
  }

  private dropCheck(c: CheckRecord): void {
    const k = key(c.node, c.checkId);
    this.checks.delete(k);
    this.checkKeysByOwner.get(key(c.node, c.serviceId))?.delete(k);
  }

  /** One write: bumps the raft index, stamps what changed, wakes the blocking reads on it. */
  private commit(serviceNames: readonly string[], serviceTableChanged: boolean): void {
    this.raftIndex++;
    if (serviceTableChanged) this.catalogIndex = this.raftIndex;
    for (const name of new Set(serviceNames)) this.serviceIndex.set(name, this.raftIndex);
    for (const p of [...this.pending]) {
      if (this.resourceIndex(p.resource) <= p.minIndex) continue;
      this.wokenByChange.set(p.resource, (this.wokenByChange.get(p.resource) ?? 0) + 1);
      this.finish(p);
    }
  }
}

function agentChecks(id: string, name: string, def: Record<string, unknown>): CheckRecord[] {
  const defs: unknown[] = Array.isArray(def.Checks)
    ? (def.Checks as unknown[])
    : isObj(def.Check)
      ? [def.Check]
      : [];
  return defs.filter(isObj).map((c, i) => ({
    node: '',
    checkId: str(c.CheckID) || (defs.length === 1 ? `service:${id}` : `service:${id}:${i + 1}`),
    name: str(c.Name) || `Service '${name}' check`,
    status: c.Status === undefined ? 'critical' : checkStatus(c.Status),
    notes: str(c.Notes),
    output: '',
    serviceId: id,
    type: c.TTL ? 'ttl' : c.HTTP ? 'http' : c.TCP ? 'tcp' : c.GRPC ? 'grpc' : 'script',
    createIndex: 0,
    modifyIndex: 0,
  }));
}

function addTo(index: Map<string, Set<string>>, at: string, value: string): void {
  const set = index.get(at) ?? new Set<string>();
  set.add(value);
  index.set(at, set);
}

function key(node: string, id: string): string {
  return `${node}\u0000${id}`;
}

function tokenOf(req: IncomingMessage, url: URL): string {
  const header = req.headers['x-consul-token'];
  if (typeof header === 'string' && header) return header;
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice('Bearer '.length);
  return url.searchParams.get('token') ?? '';
}

function enableParam(url: URL): boolean {
  const v = url.searchParams.get('enable');
  if (v === null) throw new HttpError(400, 'Missing value for enable');
  if (v !== 'true' && v !== 'false') throw new HttpError(400, `Invalid value for enable: "${v}"`);
  return v === 'true';
}

/** Go's time.ParseDuration subset Consul accepts for `wait`: "10s", "1m30s", "250ms". */
export function parseGoDuration(text: string): number {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text))
    throw new HttpError(400, `Invalid wait time: "${text}"`);
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g))
    ms += Number(m[1]) * (units[m[2] ?? 's'] ?? 0);
  return ms;
}

function decode(body: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(body || '{}');
    if (isObj(v)) return v;
  } catch (err) {
    throw new HttpError(400, `Request decode failed: ${(err as Error).message}`);
  }
  throw new HttpError(400, 'Request decode failed: expected an object');
}

function checkStatus(v: unknown): CheckStatus {
  if (v === 'passing' || v === 'warning' || v === 'critical') return v;
  throw new HttpError(400, `Invalid check status: "${String(v)}"`);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function strList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function strMap(v: unknown): Record<string, string> {
  if (!isObj(v)) return {};
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function pseudoUuid(seed: string): string {
  let h = 0;
  for (const ch of seed) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const hex = h.toString(16).padStart(8, '0');
  return `${hex}-0000-4000-8000-${hex}0000`;
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}
