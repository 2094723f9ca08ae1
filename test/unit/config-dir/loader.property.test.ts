// Property tests of the config loader (issue #44, "never crash, never half-load"): random documents
// of every supported kind and random mutations of valid ones must end in the file's own verdict —
// no exception caught by the per-file boundary (an `internal error`, i.e. a bug), none past it —
// and a valid file next to broken ones always loads, at start and after edits. Run counts are
// bounded so the file takes seconds; a failure prints fast-check's seed and shrunk counterexample.
import assert from 'node:assert/strict';
import { unlink } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { buildSnapshot } from '../../../config-dir/conversion.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { unknownSubsetWarnings } from '../../../config-dir/validate/unknown-subsets.js';
import { EMPTY_MESH_CONFIG, nextMeshConfig } from '../../../mesh/mesh-config.js';
import { resolveHost } from '../../../mesh/hosts.js';
import { configText } from '../../support/config-arbitraries.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir } from './helpers.js';

const GOOD = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: good-se, namespace: good}
spec:
  hosts: [good.example.internal]
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  workloadSelector: {labels: {app: good}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: good-vm, namespace: good}
spec: {address: 10.77.0.1, labels: {app: good}}
`;

const INTERNAL = /internal error/;

test('property: loading any file ends in its own verdict, and what it accepts converts', () => {
  fc.assert(
    fc.property(configText, fc.boolean(), (text, lenient) => {
      const load = loadConfigFile('random.yaml', text, { lenient });
      for (const e of load.errors) assert.doesNotMatch(e.message, INTERNAL, JSON.stringify(e));
      if (load.errors.length > 0) assert.equal(load.resources.length, 0);
      // What a file contributes goes on to the merge, the conversion and the mesh config.
      const merged = mergeFiles([load]);
      buildSnapshot(merged.serviceEntries, merged.workloadEntries);
      unknownSubsetWarnings(merged.virtualServices, merged.destinationRules, resolveHost);
      nextMeshConfig(EMPTY_MESH_CONFIG, merged);
      for (const r of load.resources)
        if (r.kind === 'ServiceEntry') r.spec.hosts.forEach((_, i) => load.hostPosition(r, i));
    }),
    { numRuns: 150 },
  );
});

test('property: a valid file next to broken ones always loads, at start and after edits', async (t) => {
  const records: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        records.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  const logger = pino({ level: 'warn' }, sink);
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(configText, { minLength: 1, maxLength: 3 }),
      fc.array(configText, { minLength: 1, maxLength: 3 }),
      async (first, second) => {
        round++;
        records.length = 0;
        const tmp = await makeTempDir();
        const registry = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 5, logger });
        try {
          // Broken files sort before and after the good one: none of them may skip it.
          const names = (texts: string[], tag: string) =>
            texts.map((_, i) => `${i % 2 ? 'z' : '0'}-${tag}${i}.yaml`);
          const firstNames = names(first, `r${round}a`);
          await tmp.write('m-good.yaml', GOOD);
          for (const [i, text] of first.entries()) await tmp.write(firstNames[i] as string, text);
          await registry.start();
          check(registry, ['m-good.yaml', ...firstNames], records);

          const secondNames = names(second, `r${round}b`);
          for (const name of firstNames) await unlink(`${tmp.dir}/${name}`);
          for (const [i, text] of second.entries()) await tmp.write(secondNames[i] as string, text);
          const expected = ['m-good.yaml', ...secondNames].sort();
          await eventually(
            () =>
              assert.deepEqual(
                registry.debugState().files.map((f) => f.path),
                expected,
              ),
            { what: 'the edit read' },
          );
          await registry.settled();
          check(registry, expected, records);
        } finally {
          await registry.stop();
          await tmp.cleanup();
        }
      },
    ),
    { numRuns: 10 },
  );
  t.diagnostic(`${round} directories`);
});

function check(
  registry: ConfigDirRegistry,
  files: readonly string[],
  records: { level: number; msg: string }[],
) {
  const state = registry.debugState();
  assert.deepEqual(
    state.files.map((f) => f.path),
    [...files].sort(),
  );
  for (const f of state.files)
    for (const e of f.errors) assert.doesNotMatch(e.message, INTERNAL, `${f.path}: ${e.message}`);
  const good = state.files.find((f) => f.path === 'm-good.yaml');
  assert.deepEqual(good?.resources, ['ServiceEntry/good/good-se', 'WorkloadEntry/good/good-vm']);
  assert.deepEqual(
    registry
      .snapshot()
      .endpoints.get('good.example.internal')
      ?.map((e) => e.address),
    ['10.77.0.1'],
  );
  assert.equal(registry.status().unready, undefined);
  // Nothing escaped a file's verdict into the watcher's last resort (an error-level log).
  assert.deepEqual(
    records.filter((r) => r.level >= 50).map((r) => r.msg),
    [],
  );
}
