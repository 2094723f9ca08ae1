// Fields Istio does not define are errors that name the field, its line and the closest known name;
// fields Istio defines but Portolan does not implement are warnings (logged at warn), and the file
// loads. A misspelled optional field used to be an info-level note while the service silently lost
// what the field meant (`workloadSelectr`: no endpoints).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { closest } from '../../../config-dir/validate/schema.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';
import { makeTempDir } from './helpers.js';

const se = (spec: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo}
spec:
  hosts: [echo.example.internal]
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
${spec}`;

const issues = (file: string, text: string) => {
  const load = loadConfigFile(file, text);
  return {
    errors: load.errors.map((e) => formatIssue(file, e)),
    warnings: load.warnings.map((w) => formatIssue(file, w)),
    resources: load.resources.length,
  };
};

test('a misspelled optional field is an error with file, line, field path and a suggestion', () => {
  assert.deepEqual(issues('svc.yaml', se('  workloadSelectr:\n    labels: {app: echo}\n')), {
    errors: ['svc.yaml:8 spec.workloadSelectr: unknown field (did you mean "workloadSelector"?)'],
    // What the typo would have left: a STATIC service with no endpoints (now also said).
    warnings: [
      'svc.yaml:4 spec.endpoints: resolution STATIC without endpoints or workloadSelector: the service has no endpoints',
    ],
    resources: 0,
  });
});

test('suggestions: transposed letters, another case, snake_case, and none when nothing is close', () => {
  const known = ['weight', 'targetPort', 'hosts', 'workloadSelector', 'ports'];
  assert.equal(closest('wieght', known), 'weight');
  assert.equal(closest('Hosts', known), 'hosts');
  assert.equal(closest('target_port', known), 'targetPort');
  assert.equal(closest('workloadselector', known), 'workloadSelector');
  assert.equal(closest('colour', known), undefined);

  assert.deepEqual(issues('svc.yaml', se('  endpoints:\n    - {address: 10.0.0.1, colour: blue}\n')).errors, [
    'svc.yaml:9 spec.endpoints[0].colour: unknown field (known here: address, ports, labels, network, locality, weight, serviceAccount)',
  ]);
});

test('an unknown top-level field is an error too', () => {
  assert.deepEqual(issues('svc.yaml', `${se('')}specs: {}\n`).errors, [
    'svc.yaml:8 specs: unknown field (did you mean "spec"?)',
  ]);
});

test('an Istio field Portolan does not implement is a warning, and the file loads', () => {
  const dr = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: echo}
spec:
  host: echo.example.internal
  trafficPolicy:
    tunnel: {targetHost: proxy.example, targetPort: 8080}
    loadBalancer: {simple: ROUND_ROBIN}
`;
  assert.deepEqual(issues('dr.yaml', dr), {
    errors: [],
    warnings: ['dr.yaml:7 spec.trafficPolicy.tunnel: an Istio field Portolan does not implement; ignored'],
    resources: 1,
  });
});

test('in the registry: the file is an error in its status, logged at warn, and serves nothing new', async (t) => {
  const tmp = await makeTempDir();
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  await tmp.write('svc.yaml', se('  workloadSelectr:\n    labels: {app: echo}\n'));
  const registry = new ConfigDirRegistry({ dir: tmp.dir, logger: pino({ level: 'info' }, sink) });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  const [file] = registry.debugState().files;
  assert.equal(file?.status, 'error');
  assert.deepEqual(
    file?.errors.map((e) => [e.line, e.path, e.message]),
    [[8, 'spec.workloadSelectr', 'unknown field (did you mean "workloadSelector"?)']],
  );
  assert.equal(registry.snapshot().services.size, 0);
  const logged = lines.find((l) => l.msg.includes('spec.workloadSelectr'));
  assert.equal(logged?.level, 40, 'logged at warn');
});

test('after an upgrade, a file an earlier version accepted with an unknown field stays in force, reported', async (t) => {
  const tmp = await makeTempDir();
  const dataDir = join(tmp.dir, 'data');
  await mkdir(dataDir);
  const text = se('  endpoints: [{address: 10.0.0.1}]\n  colour: blue\n');
  await tmp.write('config/svc.yaml', text);
  const store = Store.open({ dataDir, logger: silentLogger });
  // What an earlier Portolan, for which the field was a warning, recorded.
  store.history.recordConfig('svc.yaml', 'accepted', { text, resources: ['ServiceEntry/default/echo'] });
  const registry = new ConfigDirRegistry({ dir: join(tmp.dir, 'config'), history: store.history });
  t.after(async () => {
    await registry.stop();
    store.close();
    await tmp.cleanup();
  });
  await registry.start();
  const [file] = registry.debugState().files;
  assert.equal(file?.status, 'error');
  assert.match(file?.errors[0]?.message ?? '', /^unknown field/);
  assert.deepEqual(
    registry
      .snapshot()
      .endpoints.get('echo.example.internal')
      ?.map((e) => e.address),
    ['10.0.0.1'],
    'the accepted version is still served',
  );
});
