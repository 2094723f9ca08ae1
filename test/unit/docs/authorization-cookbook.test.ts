// The cookbook of docs/authorization.md against examples/authorization/: every example file has a
// section linking it, every link names a file that exists, and each YAML snippet in a section says
// nothing its file does not (the snippets abbreviate the files; they must not drift from them).
// That each file loads cleanly and renders valid config is test/unit/envoy/authorization.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { AUTHZ_EXAMPLES_DIR, authzExampleFiles, readAuthzExample } from '../../support/authz-fixture-mesh.js';

const DOC = readFileSync(join(AUTHZ_EXAMPLES_DIR, '..', '..', 'docs', 'authorization.md'), 'utf8');

interface Section {
  readonly file: string;
  readonly snippets: string[];
}

/** The cookbook sections: `### Title — [`file.yaml`](../examples/authorization/file.yaml)`. */
function sections(): Section[] {
  const out: Section[] = [];
  for (const part of DOC.split(/^### /m).slice(1)) {
    const link = /\]\(\.\.\/examples\/authorization\/([^)]+)\)/.exec(part.split('\n')[0] ?? '');
    if (!link?.[1]) continue;
    const snippets = [...part.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    out.push({ file: link[1], snippets });
  }
  return out;
}

type Value = unknown;

/** Whether everything `part` says is also in `whole` (objects: key by key; lists and scalars: equal). */
function within(part: Value, whole: Value): boolean {
  if (typeof part === 'object' && part !== null && !Array.isArray(part)) {
    if (typeof whole !== 'object' || whole === null || Array.isArray(whole)) return false;
    const w = whole as Record<string, Value>;
    return Object.entries(part).every(([k, v]) => within(v, w[k]));
  }
  if (Array.isArray(part))
    return Array.isArray(whole) && part.length === whole.length && part.every((v, i) => within(v, whole[i]));
  return part === whole;
}

const docsOf = (text: string): Value[] => parseAllDocuments(text).map((d) => d.toJS() as Value);

test('every example file has a cookbook section, and every section links an existing file', () => {
  const linked = sections().map((s) => s.file);
  assert.deepEqual([...linked].sort(), authzExampleFiles());
});

test('each snippet in the cookbook is part of the file its section links', () => {
  let checked = 0;
  for (const { file, snippets } of sections()) {
    const resources = docsOf(readAuthzExample(file));
    for (const snippet of snippets)
      for (const doc of docsOf(snippet)) {
        assert.ok(
          resources.some((r) => within(doc, r)),
          `${file}: the snippet ${JSON.stringify(doc)} is not in the file`,
        );
        checked++;
      }
  }
  assert.ok(checked >= 7, `snippets checked: ${checked}`);
});

test('the snippet check fails for a snippet that drifted from its file', () => {
  const [resource] = docsOf(readAuthzExample('allow-principal.yaml'));
  const drifted = docsOf(
    'spec:\n  rules:\n    - from: [{ source: { principals: [cluster.local/ns/shop/sa/billing] } }]\n',
  )[0];
  assert.equal(within(drifted, resource), false);
});
