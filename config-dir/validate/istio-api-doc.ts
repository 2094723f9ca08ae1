// The field table of docs/istio-compatibility.md, rendered from the Istio API table (istio-api.ts):
// one section per kind, one row per field of each of its messages. tools/istio-compat-doc.mjs
// writes it into the page; test/unit/config-dir/istio-compat-doc.test.ts checks the page is current.
import { ISTIO_API, type FieldSpec } from './istio-api.js';

export const TABLE_BEGIN =
  '<!-- BEGIN generated from config-dir/validate/istio-api.ts: npm run compat-doc -->';
export const TABLE_END = '<!-- END generated -->';

function envoyCell(f: FieldSpec): string {
  if (f.status === 'translated') return 'yes';
  if (f.status === 'ignored') return `ignored, with a warning${f.reason ? ` (${f.reason})` : ''}`;
  return `**refused**: ${f.reason ?? 'not supported'}`;
}

function grpcCell(f: FieldSpec): string {
  if (f.status !== 'translated') return '—';
  if (f.grpc === undefined) return 'yes';
  return f.grpc === false ? 'no' : f.grpc;
}

export function renderFieldTable(): string {
  const kinds = new Map<string, string[]>();
  for (const [name, message] of Object.entries(ISTIO_API)) {
    const rows = kinds.get(message.kind) ?? [];
    for (const [field, spec] of Object.entries(message.fields))
      rows.push(`| \`${name}\` | \`${field}\` | ${envoyCell(spec)} | ${grpcCell(spec)} |`);
    kinds.set(message.kind, rows);
  }
  const out: string[] = [TABLE_BEGIN];
  for (const [kind, rows] of kinds) {
    out.push(
      '',
      `### ${kind}`,
      '',
      '| message | field | Envoy | proxyless gRPC |',
      '| --- | --- | --- | --- |',
      ...rows,
    );
  }
  out.push('', TABLE_END);
  return out.join('\n');
}

/** `page` with its generated section replaced by the current table. */
export function withFieldTable(page: string): string {
  const begin = page.indexOf(TABLE_BEGIN);
  const end = page.indexOf(TABLE_END);
  if (begin < 0 || end < begin)
    throw new Error('docs/istio-compatibility.md has no generated section markers');
  return page.slice(0, begin) + renderFieldTable() + page.slice(end + TABLE_END.length);
}
