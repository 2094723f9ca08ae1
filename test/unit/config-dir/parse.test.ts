import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfigText } from '../../../config-dir/parse.js';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';

test('documents map field paths to the line of their key', () => {
  const text = [
    'a: 1',
    'spec:',
    '  ports:',
    '    - name: http',
    '      number: 80',
    '    - name: grpc',
    '      number: 70000',
    '',
  ].join('\n');
  const { documents, errors } = parseConfigText(text);
  assert.deepEqual(errors, []);
  const doc = documents[0];
  assert.ok(doc);
  assert.equal(doc.locate(['spec', 'ports']).line, 3);
  assert.equal(doc.locate(['spec', 'ports', 1]).line, 6);
  assert.equal(doc.locate(['spec', 'ports', 1, 'number']).line, 7);
  // A missing field points at its nearest written ancestor.
  assert.equal(doc.locate(['spec', 'ports', 1, 'targetPort']).line, 6);
  assert.equal(doc.locate(['spec', 'hosts']).line, 2);
});

test('several documents, each with its own lines; empty documents are skipped', () => {
  const text = '---\nkind: A\n---\n---\nkind: B\nx: 1\n---\n';
  const { documents } = parseConfigText(text);
  const values = documents.map((d) => d.value).filter((v) => v !== null);
  assert.deepEqual(values, [{ kind: 'A' }, { kind: 'B', x: 1 }]);
  const b = documents.find((d) => (d.value as { kind?: string } | null)?.kind === 'B');
  assert.equal(b?.locate(['x']).line, 6);
});

test('YAML syntax errors are reported with their line', () => {
  const load = loadConfigFile(
    'bad.yaml',
    'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nspec:\n  hosts: [a.example\n  ports: {\n',
  );
  assert.ok(load.errors.length > 0);
  assert.deepEqual(load.resources, []);
  const first = load.errors[0];
  assert.ok(first && first.line >= 4, `line ${first?.line}`);
  assert.match(formatIssue('bad.yaml', first), /^bad\.yaml:\d+ /);
});

test('duplicate keys are a syntax error', () => {
  const load = loadConfigFile('dup.yaml', 'kind: ServiceEntry\nkind: WorkloadEntry\n');
  assert.equal(load.errors.length, 1);
  assert.equal(load.errors[0]?.line, 2);
});

test('JSON files, including a List and tab indentation, load with lines', () => {
  const text = [
    '{',
    '\t"kind": "List",',
    '\t"items": [',
    '\t\t{"apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",',
    '\t\t "metadata": {"name": "vm-1"},',
    '\t\t "spec": {"address": "10.0.0.1", "weight": -1}}',
    '\t]',
    '}',
  ].join('\n');
  const load = loadConfigFile('list.json', text);
  assert.equal(load.errors.length, 1);
  assert.deepEqual(load.errors[0], {
    line: 6,
    column: load.errors[0]?.column,
    path: 'items[0].spec.weight',
    message: 'must be an integer in 0..4294967295',
  });
});

test('a bare array of resources is accepted', () => {
  const load = loadConfigFile(
    'arr.yaml',
    '- apiVersion: networking.istio.io/v1\n  kind: WorkloadEntry\n  metadata: {name: a}\n  spec: {address: 10.0.0.1}\n' +
      '- apiVersion: networking.istio.io/v1beta1\n  kind: WorkloadEntry\n  metadata: {name: b}\n  spec: {address: 10.0.0.2}\n',
  );
  assert.deepEqual(load.errors, []);
  assert.deepEqual(
    load.resources.map((r) => [r.name, r.apiVersion, r.line]),
    [
      ['a', 'networking.istio.io/v1', 1],
      ['b', 'networking.istio.io/v1beta1', 5],
    ],
  );
});
