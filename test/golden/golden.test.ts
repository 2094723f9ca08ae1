// Golden files, in the way Kuma's generator tests work: for each node of cases.ts, the full resource
// set the generators produce (what that node would hold after subscribing) is written as proto JSON
// under test/golden/<node>/{cds,eds,lds,rds}.json, with the node itself in node.json, and compared
// byte for byte. Every resource also passes Envoy's (validate.rules) and the set passes the
// consistency check. A change to generated output fails here until the files are regenerated
// (`npm run golden`, or UPDATE_GOLDEN=1 with `npm test`) and the diff is reviewed: docs/golden.md.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, TYPE_URL_PREFIX } from '../../xds/proto/type-urls.js';
import { checkConsistency } from '../../xds/validate/consistency.js';
import { validateEncoded } from '../../xds/validate/pgv-validator.js';
import { fromProtoJson } from '../../xds/validate/proto-json.js';
import { messageType } from '../../xds/proto/protos.js';
import { toProtoJson } from '../support/proto-json.js';
import { goldenCases, type GoldenCase } from './cases.js';
import { resourceSet } from './resource-set.js';

/** The source folder (the test runs compiled, from dist/test/golden/). */
const GOLDEN_DIR = fileURLToPath(new URL('../../../test/golden/', import.meta.url));
const UPDATE = process.env.UPDATE_GOLDEN === '1';

const FILES: readonly [string, string][] = [
  ['cds.json', CLUSTER],
  ['eds.json', ENDPOINT],
  ['lds.json', LISTENER],
  ['rds.json', ROUTE],
];

/** The files of one case: name → text. Asserts validity on the way. */
function render(c: GoldenCase): Map<string, string> {
  const set = resourceSet(c);
  assert.deepEqual(checkConsistency(set), [], `${c.name}: the set is consistent`);
  const files = new Map<string, string>();
  files.set('node.json', text({ about: c.about, node: c.node, requested: requested(c) }));
  for (const [file, typeUrl] of FILES) {
    const resources = [...(set.get(typeUrl) ?? [])].sort((a, b) => compare(a.name, b.name));
    const json = resources.map((r) => {
      const typeName = r.typeUrl.slice(TYPE_URL_PREFIX.length);
      assert.deepEqual(validateEncoded(typeName, r.value), [], `${c.name} ${file} ${r.name}`);
      const out = toProtoJson(r.typeUrl, r.value);
      assertReadsBack(typeName, out, `${c.name} ${file} ${r.name}`);
      return out;
    });
    files.set(file, text(json));
  }
  return files;
}

function requested(c: GoldenCase) {
  const byName = Object.fromEntries(
    FILES.flatMap(([file, t]) => (c.named[t]?.length ? [[file.slice(0, 3).toUpperCase(), c.named[t]]] : [])),
  );
  return {
    ...(c.wildcard && { wildcard: ['LDS', 'CDS'] }),
    ...(Object.keys(byName).length > 0 && { by_name: byName }),
    then: 'the RDS, CDS and EDS names the resources above reference',
    ...(c.trustDomain && { trust_domain: c.trustDomain }),
  };
}

/** The golden text is proto JSON a parser reads back to the same message (xds/validate/proto-json.ts). */
function assertReadsBack(typeName: string, json: Record<string, unknown>, what: string): void {
  const { '@type': typeUrl, ...fields } = json;
  const type = messageType(typeName);
  const bytes = type.encode(type.fromObject(fromProtoJson(typeName, fields))).finish();
  assert.deepEqual(toProtoJson(String(typeUrl), bytes), json, `${what} reads back from its proto JSON`);
}

function text(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Where two texts first differ, with a few lines of context: enough to find it in the diff. */
function firstDifference(expected: string, actual: string): string {
  const e = expected.split('\n');
  const a = actual.split('\n');
  let i = 0;
  while (i < e.length && i < a.length && e[i] === a[i]) i += 1;
  return [
    `first difference at line ${i + 1}:`,
    ...e.slice(Math.max(0, i - 3), i).map((l) => `  ${l}`),
    ...(i < e.length ? [`- ${e[i]}`] : []),
    ...(i < a.length ? [`+ ${a[i]}`] : []),
    ...e.slice(i + 1, i + 3).map((l) => `  ${l}`),
  ].join('\n');
}

const cases = goldenCases();

for (const c of cases) {
  test(`golden: ${c.name}`, () => {
    const dir = join(GOLDEN_DIR, c.name);
    const files = render(c);
    if (UPDATE) {
      mkdirSync(dir, { recursive: true });
      for (const f of readdirSync(dir)) if (!files.has(f)) rmSync(join(dir, f));
      for (const [f, body] of files) writeFileSync(join(dir, f), body);
      return;
    }
    assert.ok(existsSync(dir), `test/golden/${c.name}/ is missing: run \`npm run golden\``);
    assert.deepEqual(readdirSync(dir).sort(), [...files.keys()].sort(), `test/golden/${c.name}/ files`);
    for (const [f, body] of files) {
      const golden = readFileSync(join(dir, f), 'utf8');
      if (golden !== body)
        assert.fail(
          `test/golden/${c.name}/${f} differs from what the generators produce now; if the change is ` +
            `intended, run \`npm run golden\` and review the diff (docs/golden.md).\n${firstDifference(golden, body)}`,
        );
    }
  });
}

test('test/golden holds a folder for each case and no others', () => {
  const folders = readdirSync(GOLDEN_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  const names = new Set(cases.map((c) => c.name));
  assert.equal(names.size, cases.length, 'case names are unique');
  const stale = folders.filter((f) => !names.has(f));
  if (UPDATE) for (const f of stale) rmSync(join(GOLDEN_DIR, f), { recursive: true });
  else assert.deepEqual(stale, [], 'folders without a case (run `npm run golden` to remove them)');
});
