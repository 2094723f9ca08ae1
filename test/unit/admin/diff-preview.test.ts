// POST /debug/diff's evaluation (admin/diff.ts) on an in-process plane serving a copy of
// examples/config, with a raw proxyless client that subscribes the way grpc-js does (listener →
// route → clusters → endpoints) and an Envoy-like client on wildcards: a candidate's changes are
// listed per proxy, its follow-on asks too, a client's rejection is a problem, and nothing is applied
// (the clients are sent nothing, the registry keeps its state).
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DiffService } from '../../../admin/diff.js';
import type { CandidateFile } from '../../../config-dir/candidate.js';
import type { DiffView } from '../../../model/admin-api.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../../xds/generators/index.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { AckingAdsClient } from '../../support/acking-ads-client.js';
import { eventually } from '../../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../../support/in-process.js';
import {
  decodedResources,
  grpcNode,
  RawAdsClient,
  type DecodedResponse,
} from '../../support/raw-ads-client.js';

const HOST = 'echo.example.internal:50051';
const SPLIT = 'traffic/echo-split.yaml';
const V1 = 'outbound|50051|v1|echo.example.internal';
const V2 = 'outbound|50051|v2|echo.example.internal';
const ENVOY = 'sidecar~127.0.0.9~envoy-a.default~default.svc.cluster.local';

let plane: InProcessPlane;
let dir: string;
let files: CandidateFile[];
let grpc: RawAdsClient;
let envoy: AckingAdsClient;
let route = '';
/** Every verdict asked for, and the resources a test wants rejected (by name). */
const rejected = new Set<string>();
let service: DiffService;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portolan-diff-'));
  await cp(examplesDir(), dir, { recursive: true });
  files = await readTree(dir);
  plane = await startInProcessPlane({ configDir: dir });
  const config = plane.config;
  assert.ok(config);
  service = new DiffService({
    config,
    discovery: plane.discovery,
    streams: () => plane.ads.streamList(),
    generators: new GeneratorTable(DEFAULT_GENERATORS),
    rejection: (_proxy, _typeUrl, resource) =>
      rejected.has(resource.name) ? `planted rejection of ${resource.name}` : undefined,
  });
  grpc = new RawAdsClient(plane.address);
  route = await followAsGrpc(grpc, 'grpc-a');
  envoy = new AckingAdsClient(plane.address, {
    id: ENVOY,
    cluster: 'envoy-a',
    user_agent_name: 'envoy',
  });
  // Synced: the Envoy-like client holds its clusters and their endpoints (wildcard CDS, then EDS).
  await eventually(() => {
    const s = plane.ads.findStream(ENVOY);
    assert.ok(s && s.heldResources(CLUSTER).length > 0 && s.heldResources(ENDPOINT).length > 0);
  });
});

after(async () => {
  grpc.close();
  envoy.close();
  await plane.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The files with `path` replaced by `text` (or removed with undefined), plus `extra`. */
function candidate(changes: Record<string, string | undefined>): CandidateFile[] {
  const out = files
    .filter((f) => !(f.path in changes) || changes[f.path] !== undefined)
    .map((f) => (f.path in changes ? { path: f.path, content: changes[f.path] ?? '' } : f));
  for (const [path, content] of Object.entries(changes))
    if (content !== undefined && !files.some((f) => f.path === path)) out.push({ path, content });
  return out;
}

function splitText(w1: number, w2: number): string {
  const text = files.find((f) => f.path === SPLIT)?.content ?? '';
  return text.replace('weight: 80', `weight: ${w1}`).replace('weight: 20', `weight: ${w2}`);
}

function changesOf(view: DiffView, id: string): string[] {
  const proxy = view.proxies.find((p) => p.id === id);
  return (proxy?.changes ?? []).map((c) => `${c.op} ${c.type} ${c.name}`);
}

test('the directory evaluated as its own candidate changes nothing for any proxy', async () => {
  const view = await service.evaluate(files);
  assert.deepEqual(view.proxies, []);
  assert.deepEqual(view.problems, []);
});

test('a weight change is a route change for the proxyless client, with its diff, and nothing is applied', async () => {
  const generation = plane.config?.meshConfig().generation;
  const catalog = plane.discovery.catalog();
  const view = await service.evaluate(candidate({ [SPLIT]: splitText(50, 50) }));
  assert.deepEqual(changesOf(view, 'grpc-a'), [`change RDS ${route}`]);
  const change = view.proxies.find((p) => p.id === 'grpc-a')?.changes[0];
  assert.ok(change);
  const lines = change.diff.split('\n');
  assert.ok(
    lines.every((l) => /^[-+ ]/.test(l)),
    change.diff,
  );
  assert.ok(
    lines.some((l) => l.startsWith('-') && l.includes('80')),
    change.diff,
  );
  assert.ok(
    lines.some((l) => l.startsWith('+') && l.includes('50')),
    change.diff,
  );
  assert.deepEqual(view.problems, []);
  // Nothing applied: the same mesh config and catalog, and the client was sent nothing.
  assert.equal(plane.config?.meshConfig().generation, generation);
  assert.equal(plane.discovery.catalog(), catalog);
  await grpc.expectSilence();
});

test('a route to a new service lists the cluster and endpoints a proxyless client would ask for next', async () => {
  const other = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: other
  namespace: default
spec:
  hosts: [other.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
    - name: grpc
      number: 50051
      protocol: GRPC
  endpoints:
    - address: 127.0.0.7
`;
  const split = splitText(80, 20).replace(
    '{ host: echo.example.internal, subset: v2 }',
    '{ host: other.example.internal }',
  );
  const view = await service.evaluate(candidate({ [SPLIT]: split, 'services/other.yaml': other }));
  const cluster = 'outbound|50051||other.example.internal';
  assert.deepEqual(changesOf(view, 'grpc-a'), [
    `change RDS ${route}`,
    `add CDS ${cluster}`,
    `add EDS ${cluster}`,
  ]);
  assert.deepEqual(view.problems, []);
});

test('a broken file is a problem with its file and line, and the other files are still evaluated', async () => {
  const echo2 = files.find((f) => f.path === 'workloads/echo-2.yaml')?.content ?? '';
  const view = await service.evaluate(
    candidate({
      [SPLIT]: splitText(70, 20),
      'workloads/echo-2.yaml': echo2.replace('127.0.0.2', '127.0.0.22'),
    }),
  );
  assert.equal(view.problems.length, 1, JSON.stringify(view.problems));
  const problem = view.problems[0] as { file: string; line: number; message: string };
  assert.equal(problem.file, SPLIT);
  const weightLine =
    splitText(70, 20)
      .split('\n')
      .findIndex((l) => l.includes('weight: 70')) + 1;
  assert.ok(problem.line > 0 && problem.line <= weightLine, `line ${problem.line}`);
  assert.match(problem.message, /100/);
  // The split keeps its version in force (no RDS change); the moved VM is an endpoint change.
  assert.deepEqual(changesOf(view, 'grpc-a'), [`change EDS ${V2}`]);
});

test('a resource the client would reject is a problem, and no change is listed for it', async () => {
  rejected.add(route);
  try {
    const view = await service.evaluate(candidate({ [SPLIT]: splitText(50, 50) }));
    assert.deepEqual(changesOf(view, 'grpc-a'), []);
    assert.ok(
      view.problems.some(
        (p) =>
          'proxy' in p &&
          p.proxy === 'grpc-a' &&
          p.type === 'RDS' &&
          p.name === route &&
          /planted/.test(p.message),
      ),
      JSON.stringify(view.problems),
    );
  } finally {
    rejected.delete(route);
  }
});

test('a removed file removes what it defined: the VM leaves its subset', async () => {
  const view = await service.evaluate(candidate({ 'workloads/echo-1.yaml': undefined }));
  assert.deepEqual(changesOf(view, 'grpc-a'), [`change EDS ${V1}`]);
  // The Envoy-like client, on a wildcard CDS, holds the subset's endpoints too.
  assert.ok(changesOf(view, ENVOY).includes(`change EDS ${V1}`), changesOf(view, ENVOY).join());
});

/** Subscribes like grpc-js: the listener, its route, the route's clusters, their endpoints; ACKs each. */
async function followAsGrpc(client: RawAdsClient, id: string): Promise<string> {
  const listener = await ask(client, { node: grpcNode(id), type_url: LISTENER, resource_names: [HOST] });
  const hcm = (
    decodedResources(listener)[0] as {
      api_listener: { api_listener: { rds: { route_config_name: string } } };
    }
  ).api_listener.api_listener;
  const routeName = hcm.rds.route_config_name;
  const routes = await ask(client, { type_url: ROUTE, resource_names: [routeName] });
  const clusters = [
    ...new Set(
      JSON.stringify(decodedResources(routes))
        .match(/outbound\|[^"]+/g)
        ?.map((n) => n) ?? [],
    ),
  ].sort();
  assert.deepEqual(clusters, [V1, V2]);
  await ask(client, { type_url: CLUSTER, resource_names: clusters });
  await ask(client, { type_url: ENDPOINT, resource_names: clusters });
  return routeName;
}

async function ask(
  client: RawAdsClient,
  req: { node?: object; type_url: string; resource_names: string[] },
): Promise<DecodedResponse> {
  client.send(req);
  const res = await client.next();
  assert.equal(res.type_url, req.type_url);
  client.ack(res, req.resource_names);
  return res;
}

async function readTree(root: string): Promise<CandidateFile[]> {
  const out: CandidateFile[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    out.push({ path: relative(root, full).split('\\').join('/'), content: await readFile(full, 'utf8') });
  }
  return out;
}

function examplesDir(): string {
  let here = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++, here = dirname(here))
    if (existsSync(join(here, 'examples', 'config'))) return join(here, 'examples', 'config');
  return resolve('examples', 'config');
}
