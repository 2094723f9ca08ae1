// The folder dependency rule, enforced by `npm run lint`: each top-level source folder may import
// only the folders listed for it, so the graph stays acyclic and data flows one way (README,
// "Layout"). Relative imports are resolved to their top-level folder; packages are not checked.
import { dirname, relative, resolve, sep } from 'node:path';

const LEAVES = ['model', 'log'];

/** folder → the folders it may import (besides itself and the leaves). */
export const ALLOWED = {
  model: [],
  log: [],
  mesh: [],
  adapters: [],
  aggregate: [],
  store: [],
  xds: ['mesh'],
  'config-dir': ['mesh', 'adapters'],
  ca: ['mesh', 'store'],
  metrics: ['xds'],
  admin: ['mesh', 'adapters', 'aggregate', 'store', 'xds', 'config-dir', 'ca', 'metrics'],
  cli: '*',
  // The demo (npm run demo) runs `portolan serve` as a process; it imports none of the sources.
  demo: [],
};

/** Imports of these pairs must be `import type`: metrics implements xds's observer, nothing more. */
const TYPE_ONLY = { metrics: ['xds'] };

function topFolder(root, file) {
  const rel = relative(root, file);
  return rel.startsWith('..') ? undefined : rel.split(sep)[0];
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'top-level folders import only the folders below them' },
    schema: [],
  },
  create(context) {
    const root = context.cwd;
    const file = context.filename;
    const from = topFolder(root, file);
    const allowed = from === undefined ? undefined : ALLOWED[from];
    if (allowed === undefined || allowed === '*') return {};
    const check = (node, source, typeOnly) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const to = topFolder(root, resolve(dirname(file), source));
      if (to === undefined || to === from || LEAVES.includes(to)) return;
      if (!(to in ALLOWED)) return;
      if (!allowed.includes(to)) {
        const may = [...allowed, ...LEAVES].join(', ');
        context.report({
          node,
          message: `${from}/ may not import ${to}/ (it may import: ${may}); see README "Layout"`,
        });
      } else if (TYPE_ONLY[from]?.includes(to) && !typeOnly) {
        context.report({ node, message: `${from}/ may import only types from ${to}/ (use "import type")` });
      }
    };
    return {
      ImportDeclaration(node) {
        const typeOnly =
          node.importKind === 'type' ||
          (node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === 'type'));
        check(node, node.source.value, typeOnly);
      },
      ExportNamedDeclaration(node) {
        if (node.source) check(node, node.source.value, node.exportKind === 'type');
      },
      ExportAllDeclaration(node) {
        check(node, node.source.value, node.exportKind === 'type');
      },
      ImportExpression(node) {
        if (node.source.type === 'Literal') check(node, node.source.value, false);
      },
    };
  },
};

export default { rules: { 'folder-imports': rule } };
