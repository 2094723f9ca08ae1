// Prints the import graph between top-level source folders (`npm run graph`): each folder with the
// folders it imports and how many import lines, then any cycle. Tests, benchmarks and tools are
// left out: they may import anything. The rule that keeps it acyclic is tools/eslint-layers.mjs.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ALLOWED } from './eslint-layers.mjs';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const folders = Object.keys(ALLOWED).filter((f) => {
  try {
    return statSync(join(root, f)).isDirectory();
  } catch {
    return false;
  }
});
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function* tsFiles(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'generated' || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts')) yield p;
  }
}

const edges = new Map(folders.map((f) => [f, new Map()]));
for (const from of folders) {
  for (const file of tsFiles(join(root, from))) {
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const to = relative(root, resolve(dirname(file), m[1])).split(sep)[0];
      if (to === from || !edges.has(to)) continue;
      const out = edges.get(from);
      out.set(to, (out.get(to) ?? 0) + 1);
    }
  }
}

for (const [from, out] of edges) {
  const list = [...out].sort(([a], [b]) => a.localeCompare(b)).map(([to, n]) => `${to} (${n})`);
  console.log(`${from.padEnd(11)} → ${list.join(', ') || '(nothing)'}`);
}

// Cycles: a depth-first search over folders; each cycle printed once from its smallest member.
const cycles = new Set();
const walk = (start, at, path) => {
  for (const next of edges.get(at).keys()) {
    if (next === start) cycles.add([...path].join(' → ') + ` → ${start}`);
    else if (!path.includes(next) && next > start) walk(start, next, [...path, next]);
  }
};
for (const f of folders) walk(f, f, [f]);
console.log(cycles.size === 0 ? '\nacyclic' : `\n${cycles.size} cycle(s):\n${[...cycles].join('\n')}`);
process.exitCode = cycles.size === 0 ? 0 : 1;
