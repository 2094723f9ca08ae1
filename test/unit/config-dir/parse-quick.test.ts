// The quick parse (js-yaml) against the precise one (the yaml library): wherever the quick way
// answers, it must give the same documents, values and document positions; where the two might
// differ, it must decline.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfigFile } from '../../../config-dir/load-file.js';
import { MAX_DOCUMENTS_PER_FILE, parsePrecisely, type ParsedText } from '../../../config-dir/parse.js';
import { quickParse } from '../../../config-dir/parse-quick.js';

const EXAMPLES = join(import.meta.dirname, '..', '..', '..', '..', 'examples');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.(ya?ml|json)$/.test(name) ? [path] : [];
  });
}

const SNIPPETS: Record<string, string> = {
  scalars: [
    'ints: [0, -1, +2, 0o17, 0x1F, 012, 1_000]',
    'floats: [1.5, -2e3, .inf, -.Inf, .nan, 1e400]',
    'bools: [true, True, TRUE, false, yes, no, on, off, y, n]',
    'nulls: [null, Null, ~, ""]',
    'dates: [2001-12-14, 2001-12-14t21:59:43.10-05:00]',
    "strings: [\"a\\tb\\u00e9\", 'it''s', plain text, \"*.example.com\", '&x']",
    '1: numeric key',
    'true: bool key',
    '"quoted": key',
  ].join('\n'),
  blocks: [
    '# a comment first',
    '',
    'literal: |',
    '  line one',
    '    indented',
    'folded: >-',
    '  a',
    '  b',
    'keep: |+',
    '  x',
    '',
    'nested:',
    '  - a: 1',
    '    b: [1, {c: d}]',
    '  -   - deep',
    '      - list',
    '  - ? complex',
    '    : value',
  ].join('\n'),
  documents: '---\nkind: A\n---\n---\n# only a comment\n---\nkind: B\nx: 1\n...\n---\n  indented: root\n',
  flowRoot: '--- {a: 1, b: [x, y]}\n--- [1, 2]\n--- scalar\n',
  json: '{\n\t"kind": "List",\n\t"items": [{"a": 1}, {"b": null}]\n}\n',
  mergeKey: 'base: {a: 1}\nother:\n  <<: {b: 2}\n  c: 3\n',
  proto: '__proto__: {polluted: true}\nconstructor: x\n',
  crlf: 'a: 1\r\nb:\r\n  - 2\r\n',
  bom: '\ufeffa: 1\n',
  emptyFile: '',
  whitespaceOnly: '\n\n  \n',
  serviceEntry: [
    'apiVersion: networking.istio.io/v1',
    'kind: ServiceEntry',
    'metadata: { name: svc-5 }',
    'spec:',
    '  hosts: [svc-5.churn.internal, "svc-5.alias.internal"]',
    '  ports: [{ number: 7070, name: grpc, protocol: GRPC }]',
    '  resolution: STATIC',
    '  endpoints:',
    '    - { address: 10.0.3.1, labels: { version: v1 } }',
    '    - address: 10.0.3.2',
    '      weight: 3',
  ].join('\n'),
};

/** The same documents, values and document positions as the precise parse. */
function assertAgrees(name: string, quick: ParsedText, precise: ParsedText): void {
  assert.deepEqual(precise.errors, [], `${name}: the precise parse has errors`);
  assert.deepEqual(
    quick.documents.map((d) => d.index),
    precise.documents.map((d) => d.index),
    `${name}: documents`,
  );
  quick.documents.forEach((d, i) => {
    const p = precise.documents[i];
    assert.deepEqual(d.value, p?.value, `${name}: document ${i}'s value`);
    if (p?.value !== null && p?.value !== undefined)
      assert.deepEqual(d.locate([]), p.locate([]), `${name}: document ${i}'s position`);
  });
}

test('the quick parse agrees with the precise one on every example file and on tricky YAML', () => {
  const cases = [
    ...yamlFiles(EXAMPLES).map((path): [string, string] => [path, readFileSync(path, 'utf8')]),
    ...Object.entries(SNIPPETS),
  ];
  let quickly = 0;
  for (const [name, text] of cases) {
    const quick = quickParse(text, MAX_DOCUMENTS_PER_FILE, parsePrecisely);
    const precise = parsePrecisely(text);
    if (!quick) continue;
    quickly += 1;
    assertAgrees(name, quick, precise);
  }
  // The comparison means something only if the quick way answered for most of them.
  assert.ok(quickly >= cases.length - 5, `${quickly} of ${cases.length} read the quick way`);
});

test('the quick parse declines what the two libraries may read differently, and what it rejects', () => {
  for (const text of [
    'a: &x {b: 1}\nc: *x\n',
    'a: !!str 1\n',
    '%YAML 1.2\n---\na: 1\n',
    'a: 1\na: 2\n', // duplicate key: the precise parse words the error
    'a: [1, 2\n',
    'a:\n\t- tab-indented block\n',
  ]) {
    assert.equal(quickParse(text, MAX_DOCUMENTS_PER_FILE, parsePrecisely), undefined, text);
  }
  assert.equal(quickParse('a: 1\n---\nb: 2\n', 1, parsePrecisely), undefined, 'over the document limit');
});

test('a field position asked of a quick document comes from the precise parse of the same text', () => {
  const text = 'kind: A\nspec:\n  ports:\n    - name: http\n      number: 80\n';
  let precise = 0;
  const quick = quickParse(text, MAX_DOCUMENTS_PER_FILE, (t) => {
    precise += 1;
    return parsePrecisely(t);
  });
  assert.ok(quick);
  const doc = quick.documents[0];
  assert.deepEqual(doc?.locate([]), { line: 1, column: 1 });
  assert.equal(precise, 0, 'a document position needs no precise parse');
  assert.equal(doc?.locate(['spec', 'ports', 0, 'number']).line, 5);
  assert.equal(doc?.locate(['spec', 'ports']).line, 3);
  assert.equal(precise, 1, 'made once, when first asked');
});

test('a valid ServiceEntry file loads without the precise parse; an invalid one is reported at the field', () => {
  const good = SNIPPETS.serviceEntry ?? '';
  const load = loadConfigFile('svc.yaml', good);
  assert.deepEqual(load.errors, []);
  assert.equal(load.resources.length, 1);
  assert.equal(load.resources[0]?.line, 1);
  const bad = loadConfigFile('svc.yaml', good.replace('weight: 3', 'weight: -3'));
  assert.equal(bad.errors[0]?.line, 11);
  assert.equal(bad.errors[0]?.path, 'spec.endpoints[1].weight');
});
