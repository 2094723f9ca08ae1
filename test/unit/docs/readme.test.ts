// The README is the front door: its client snippet and bootstrap are the files the demo runs (so
// test/e2e/demo.test.ts runs what the README shows), its links and the docs' links lead somewhere,
// and its Layout names every source folder, as tsconfig.json and the lint rule do.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const readme = read('README.md');

test('the README shows examples/grpc-client/echo-client.mjs and bootstrap.json verbatim', () => {
  for (const [lang, file] of [
    ['js', 'examples/grpc-client/echo-client.mjs'],
    ['json', 'examples/grpc-client/bootstrap.json'],
  ] as const)
    assert.ok(
      readme.includes('```' + lang + '\n' + read(file) + '```'),
      `${file} is not in the README as written`,
    );
});

test('every relative link in the README, docs/ and config-dir/README.md names an existing file', () => {
  const pages = [
    'README.md',
    'config-dir/README.md',
    ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`),
  ];
  const broken: string[] = [];
  for (const page of pages.filter((p) => p.endsWith('.md')))
    for (const m of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = (m[1] ?? '').split('#')[0] ?? '';
      if (!target || /^[a-z]+:/.test(target)) continue;
      if (!existsSync(join(ROOT, dirname(page), target))) broken.push(`${page} → ${m[1]}`);
    }
  assert.deepEqual(broken, []);
});

/** Top-level folders holding TypeScript sources. */
function sourceFolders(): string[] {
  const hasTs = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? e.name !== 'generated' && hasTs(join(dir, e.name)) : e.name.endsWith('.ts'),
    );
  return readdirSync(ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !['node_modules', 'dist'].includes(e.name) && !e.name.startsWith('.'))
    .map((e) => e.name)
    .filter((name) => hasTs(join(ROOT, name)))
    .sort();
}

test('tsconfig.json includes every source folder by name, and the README Layout lists each', () => {
  const tsconfig = JSON.parse(read('tsconfig.json')) as { include: string[] };
  const folders = sourceFolders();
  // A folder compiled for another runtime (ui/: the browser) has its own tsconfig, built by npm run build.
  const own = folders.filter((f) => existsSync(join(ROOT, f, 'tsconfig.json')));
  const build = (JSON.parse(read('package.json')) as { scripts: { build: string } }).scripts.build;
  for (const f of own) assert.ok(build.includes(`tsc -p ${f}/tsconfig.json`), `npm run build compiles ${f}/`);
  assert.deepEqual(
    [...tsconfig.include].sort(),
    folders.filter((f) => !own.includes(f)),
  );
  const layout = readme.slice(readme.indexOf('## Layout'), readme.indexOf('## Dependencies'));
  for (const folder of folders) assert.ok(layout.includes(`| \`${folder}/`), `${folder}/ in README Layout`);
});

test('the folder rule (tools/eslint-layers.mjs) covers every source folder but tests and benchmarks', async () => {
  const rule = (await import(pathToFileURL(join(ROOT, 'tools', 'eslint-layers.mjs')).href)) as {
    ALLOWED: Record<string, unknown>;
  };
  assert.deepEqual(
    Object.keys(rule.ALLOWED).sort(),
    sourceFolders().filter((f) => f !== 'test' && f !== 'bench'),
  );
});
