// The folder dependency rules, enforced by `npm run lint`: each top-level source folder may import
// only the folders listed for it, so the graph stays acyclic and data flows one way (README,
// "Layout"); and inside xds/, the server reaches generation only through the generator seam.
// Relative imports are resolved to their folder; packages are not checked.
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
  // Auto-registration (WorkloadGroup): a registry of VMs the control plane owns, fed through seams.
  registration: ['mesh'],
  admin: ['mesh', 'adapters', 'aggregate', 'store', 'xds', 'config-dir', 'ca', 'metrics', 'registration'],
  // `portolan agent`, the VM side: the workload certificate (ca), an xDS proxy (xds), SDS.
  agent: ['ca', 'xds', 'mesh'],
  cli: '*',
  // The demo (npm run demo) runs `portolan serve` as a process; it imports none of the sources.
  demo: [],
  // The dashboard runs in the browser: it reads the admin API over HTTP and imports no server code,
  // only the types of that API's JSON (ONLY_TYPES_OF below; not even the leaves).
  ui: [],
};

/** Folders that may import nothing outside themselves but the types of these files. */
const ONLY_TYPES_OF = { ui: ['model/admin-api.ts'] };

/** Imports of these pairs must be `import type`: metrics implements xds's observer, nothing more. */
const TYPE_ONLY = { metrics: ['xds'] };

function topFolder(root, file) {
  const rel = relative(root, file);
  return rel.startsWith('..') ? undefined : rel.split(sep)[0];
}

/**
 * Finer than folders: files under `from` may not import under `forbidden`, except `allowed`.
 * The ADS server is given its generator table and push check (by cli/): it sees the generator
 * interface, the per-view memo in the generate context and the resource names, nothing that builds.
 * The protocol state machines (xds/protocol/) are shared by the server, the agent and SDS: they
 * import nothing of the server, and the agent reaches the protocol only through them.
 */
export const SEAMS = [
  {
    from: 'xds/server',
    forbidden: ['xds/generators', 'xds/traffic', 'xds/validate'],
    allowed: ['xds/generators/generator.ts', 'xds/generators/view-memo.ts', 'xds/generators/names.ts'],
  },
  { from: 'xds/protocol', forbidden: ['xds/server', 'xds/generators'], allowed: [] },
  { from: 'agent', forbidden: ['xds/server'], allowed: [] },
];

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
      if (to === from) return;
      const only = ONLY_TYPES_OF[from];
      if (only) {
        // Sources name the compiled .js; the list names the .ts files.
        const target = relative(root, resolve(dirname(file), source))
          .split(sep)
          .join('/')
          .replace(/\.js$/, '.ts');
        if (!only.includes(target) || !typeOnly)
          context.report({
            node,
            message: `${from}/ may import only types ("import type") from ${only.join(', ')}`,
          });
        return;
      }
      if (to === undefined || LEAVES.includes(to)) return;
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

const under = (path, folder) => path === folder || path.startsWith(`${folder}/`);

const seamRule = {
  meta: {
    type: 'problem',
    docs: { description: 'sub-folders reach each other only through their seams' },
    schema: [],
  },
  create(context) {
    const root = context.cwd;
    const file = relative(root, context.filename).split(sep).join('/');
    const seams = SEAMS.filter((s) => under(file, s.from));
    if (seams.length === 0) return {};
    const check = (node, source) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      // Sources name the compiled .js; the rule lists the .ts files.
      const target = relative(root, resolve(dirname(context.filename), source))
        .split(sep)
        .join('/')
        .replace(/\.js$/, '.ts');
      for (const seam of seams) {
        if (!seam.forbidden.some((f) => under(target, f)) || seam.allowed.includes(target)) continue;
        const may =
          seam.allowed.length > 0
            ? `of ${seam.forbidden.join(', ')} it may import only ${seam.allowed.join(', ')} (it is given the rest)`
            : `it may import nothing under ${seam.forbidden.join(', ')}`;
        context.report({ node, message: `${seam.from}/ may not import ${target}: ${may}` });
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};

export default { rules: { 'folder-imports': rule, 'seam-imports': seamRule } };
