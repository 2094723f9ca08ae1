// The dashboard's one way into the server's sources: the lint rule (tools/eslint-layers.mjs) lets
// ui/ import only the types of model/admin-api.ts, and nothing else outside ui/ (not even the leaves,
// whose modules may reach Node). Run through ESLint's Linter with the rule as `npm run lint` loads it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Linter, type ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

async function lintUi(code: string, file = 'ui/pages/probe.ts'): Promise<string[]> {
  const layers = (await import(pathToFileURL(join(ROOT, 'tools', 'eslint-layers.mjs')).href)) as {
    default: ESLint.Plugin;
  };
  const linter = new Linter({ cwd: ROOT });
  const config: Linter.Config[] = [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { layers: layers.default },
      rules: { 'layers/folder-imports': 'error' },
    },
  ];
  return linter.verify(code, config, { filename: join(ROOT, file) }).map((m) => m.message);
}

test('ui/ may import the types of model/admin-api.ts, either way of writing it, and its own files', async () => {
  const code = [
    "import type { SynczView } from '../../model/admin-api.js';",
    "import { type CazView } from '../../model/admin-api.js';",
    "export type { ConfigzView } from '../../model/admin-api.js';",
    "import { getJson } from '../api.js';",
  ].join('\n');
  assert.deepEqual(await lintUi(code), []);
});

test('ui/ may not import a value from model/admin-api.ts, nor anything else outside ui/', async () => {
  const refused = [
    "import * as Api from '../../model/admin-api.js';",
    "import { SynczView } from '../../model/admin-api.js';",
    "import type { Service } from '../../model/service.js';",
    "import type { Logger } from '../../log/logger.js';",
    "import type { AdsServer } from '../../xds/server/ads-server.js';",
    "const m = import('../../model/admin-api.js');",
  ];
  for (const line of refused)
    assert.deepEqual(
      await lintUi(line),
      ['ui/ may import only types ("import type") from model/admin-api.ts'],
      line,
    );
});

test('the other folders keep the leaves: admin/ may import model/ values', async () => {
  assert.deepEqual(await lintUi("import { localityKey } from '../model/endpoint.js';", 'admin/probe.ts'), []);
});
