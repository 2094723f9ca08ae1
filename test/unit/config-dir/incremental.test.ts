// An edit the registry applies host by host (config-dir/incremental.ts) must serve exactly what a
// full reload of the same directory serves. A seeded sequence of edits — files of plain
// ServiceEntries (the incremental path), files of WorkloadEntries alone (the selector path: labels
// and addresses changing, some unfit for the selecting entry), entries with selectors and
// WorkloadEntries, files of traffic config alone (VirtualServices and DestinationRules, subsets that
// routes name or not: the mesh-config path), hosts moving between files,
// deletes, several files in one batch — is applied to
// one running registry, and after each step its snapshot, resources, conflicts and file statuses
// are compared with those of a registry started fresh on the directory.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import type { RegistrySnapshot } from '../../../model/change.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir } from './helpers.js';

const FILES = 6;
const HOSTS = Array.from({ length: 10 }, (_, i) => `h${i}.incremental.internal`);
const STEPS = 60;

function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const plainEntry = (
  name: string,
  hosts: readonly string[],
  step: number,
): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}}
spec:
  hosts: [${hosts.join(', ')}]
  resolution: STATIC
  ports: [{name: grpc, number: 7070, protocol: GRPC}]
  endpoints: [{address: 10.0.${step % 250}.1}, {address: 10.0.${step % 250}.2}]
`;

const selectorEntry = (
  name: string,
  hosts: readonly string[],
  step: number,
): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}}
spec:
  hosts: [${hosts.join(', ')}]
  resolution: STATIC
  ports: [{name: grpc, number: 7070, protocol: GRPC}]
  workloadSelector: {labels: {app: selected}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: we-${name}}
spec: {address: 10.1.${step % 250}.1, labels: {app: selected}}
`;

/** One or two VMs; their labels decide which selecting ServiceEntries (app: selected) take them. */
const workloadEntries = (file: number, step: number, next: () => number): string =>
  Array.from(
    { length: 1 + Math.floor(next() * 2) },
    (_, i) => `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm${file}-${i}}
spec:
  address: ${next() < 0.1 ? `vm${file}.example.internal` : `10.2.${step % 250}.${file * 2 + i + 1}`}
  labels: {app: ${next() < 0.7 ? 'selected' : 'other'}, step: s${step}}
`,
  ).join('---\n');

const virtualService = (
  name: string,
  host: string,
  subset = '',
): string => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ${name}}
spec:
  hosts: [${host}]
  http: [{route: [{destination: {host: ${host}${subset ? `, subset: ${subset}` : ''}}}]}]
`;

const destinationRule = (
  name: string,
  host: string,
  step: number,
): string => `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ${name}}
spec:
  host: ${host}
  trafficPolicy: {connectionPool: {http: {http2MaxRequests: ${step + 1}}}}
  subsets: [{name: v${1 + (step % 2)}, labels: {version: v${1 + (step % 2)}}}]
`;

/** A file of traffic config only: a VirtualService, a DestinationRule, or both. */
const trafficConfig = (file: number, step: number, next: () => number): string => {
  const host = HOSTS[Math.floor(next() * HOSTS.length)] as string;
  // Names of the file's own: a clash would be settled by which file came first, which a fresh load cannot know.
  const vs = virtualService(`vs${file}`, host, ['', 'v1', 'v2'][Math.floor(next() * 3)]);
  const dr = destinationRule(`dr${file}`, host, step);
  const roll = next();
  return roll < 0.35 ? vs : roll < 0.7 ? dr : `${vs}---\n${dr}`;
};

function served(snapshot: RegistrySnapshot): unknown {
  return [...snapshot.services.keys()]
    .sort()
    .map((host) => [host, snapshot.services.get(host), snapshot.endpoints.get(host)]);
}

function view(registry: ConfigDirRegistry): unknown {
  const debug = registry.debugState();
  return {
    served: served(registry.snapshot()),
    counts: [registry.status().services, registry.status().endpoints],
    resources: JSON.stringify(debug.resources),
    conflicts: debug.conflicts,
    warnings: debug.warnings,
    files: debug.files.map((f) => [f.path, f.status, f.resources]),
    mesh: JSON.stringify({ ...registry.meshConfig(), generation: 0 }),
  };
}

/** Waits until `live` serves what a registry started fresh on `dir` serves. */
async function servesFreshLoad(dir: string, live: ConfigDirRegistry, what: string): Promise<void> {
  const fresh = new ConfigDirRegistry({ dir, debounceMs: 20 });
  await fresh.start();
  const expected = view(fresh);
  await fresh.stop();
  await eventually(() => assert.deepEqual(view(live), expected), { what });
}

/**
 * A registry on the directory as it is, then four files (`pathOf(0..3)`) edited STEPS times in batches of one
 * or two: each rewritten with `content(file, step)`, or one time in ten deleted. After each step the
 * registry serves what a fresh load serves.
 */
async function editFourFiles(
  t: TestContext,
  tmp: Awaited<ReturnType<typeof makeTempDir>>,
  next: () => number,
  label: string,
  pathOf: (file: number) => string,
  content: (file: number, step: number) => string,
): Promise<void> {
  const live = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 20 });
  t.after(() => live.stop());
  await live.start();
  for (let step = 1; step <= STEPS; step++) {
    const batch = new Set(Array.from({ length: 1 + Math.floor(next() * 2) }, () => Math.floor(next() * 4)));
    for (const file of batch) {
      if (next() < 0.1) await rm(join(tmp.dir, pathOf(file)), { force: true });
      else await tmp.write(pathOf(file), content(file, step));
    }
    await servesFreshLoad(
      tmp.dir,
      live,
      `the live registry to serve what a fresh load serves after ${label} step ${step} (files ${[...batch].join(', ')})`,
    );
  }
}

test('edits applied one by one serve what a fresh load of the same directory serves', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const next = random(18);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  /** Hosts each file serves now: a file only takes hosts no other file serves, so nothing clashes. */
  const owned = new Map<number, readonly string[]>();
  const freeHosts = (file: number): string[] =>
    HOSTS.filter((h) => ![...owned].some(([f, hosts]) => f !== file && hosts.includes(h)));
  const path = (file: number): string => join(file % 2 === 0 ? '' : 'sub', `f${file}.yaml`);

  for (let file = 0; file < FILES; file++) {
    owned.set(file, [HOSTS[file] as string]);
    await tmp.write(path(file), plainEntry(`se${file}`, [HOSTS[file] as string], 0));
  }
  const live = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 20 });
  t.after(() => live.stop());
  await live.start();

  for (let step = 1; step <= STEPS; step++) {
    // One to three files in one batch.
    const batch = new Set(
      Array.from({ length: 1 + Math.floor(next() * 3) }, () => Math.floor(next() * FILES)),
    );
    for (const file of batch) {
      const free = freeHosts(file);
      const hosts = free.filter(() => next() < 0.3).slice(0, 3);
      if (hosts.length === 0 && free.length > 0) hosts.push(pick(free));
      const kind = next();
      if (kind < 0.12 || hosts.length === 0) {
        owned.delete(file);
        await rm(join(tmp.dir, path(file)), { force: true });
      } else if (kind < 0.45) {
        owned.set(file, hosts);
        await tmp.write(path(file), plainEntry(`se${file}`, hosts, step));
      } else if (kind < 0.6) {
        owned.set(file, []);
        await tmp.write(path(file), workloadEntries(file, step, next));
      } else if (kind < 0.72) {
        owned.set(file, hosts);
        await tmp.write(path(file), selectorEntry(`se${file}`, hosts, step));
      } else {
        owned.set(file, []);
        await tmp.write(path(file), trafficConfig(file, step, next));
      }
    }
    await servesFreshLoad(
      tmp.dir,
      live,
      `the live registry to serve what a fresh load serves after step ${step} (files ${[...batch].join(', ')})`,
    );
  }
});

test('WorkloadEntry files edited one by one (the selector path) serve what a fresh load serves', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const next = random(1818);
  // Two selecting ServiceEntries (one with a fixed VM of its own) and a plain one stay; four files
  // of VMs change: labels in and out of the selection, addresses, one or two entries, deletes.
  await tmp.write('a-selecting.yaml', selectorEntry('sel-a', [HOSTS[0] as string], 0));
  await tmp.write('b-selecting.yaml', selectorEntry('sel-b', [HOSTS[1] as string, HOSTS[2] as string], 1));
  await tmp.write('c-plain.yaml', plainEntry('plain', [HOSTS[3] as string], 0));
  const vmPath = (file: number): string => join(file % 2 === 0 ? '' : 'vms', `vm${file}.yaml`);
  for (let file = 0; file < 4; file++) await tmp.write(vmPath(file), workloadEntries(file, 0, next));
  await editFourFiles(t, tmp, next, 'VM', vmPath, (file, step) => workloadEntries(file, step, next));
});

test('traffic-config files edited one by one (the mesh-config path) serve what a fresh load serves', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const next = random(2025);
  // Services stay, beside a broken file (the directory keeps answering only in part); four files of
  // VirtualServices and DestinationRules change: hosts, subsets routes name or rules define, both
  // kinds in one file or one, deletes.
  await tmp.write('a-services.yaml', plainEntry('plain', [HOSTS[0] as string, HOSTS[1] as string], 0));
  await tmp.write('b-selecting.yaml', selectorEntry('sel', [HOSTS[2] as string], 1));
  await tmp.write('c-broken.yaml', 'kind: [');
  const trafficPath = (file: number): string => join(file % 2 === 0 ? '' : 'traffic', `t${file}.yaml`);
  for (let file = 0; file < 4; file++) await tmp.write(trafficPath(file), trafficConfig(file, 0, next));
  await editFourFiles(t, tmp, next, 'traffic', trafficPath, (file, step) => trafficConfig(file, step, next));
});
