// Text → documents. YAML and JSON both go through the yaml library (JSON is YAML 1.2 flow syntax),
// so every document keeps its node tree and any field path can be mapped back to a line.
import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseAllDocuments,
  type Document,
  type Node,
} from 'yaml';
import type { ConfigIssue } from './issue.js';

export type FieldPath = readonly (string | number)[];

export interface Position {
  readonly line: number;
  readonly column: number;
}

export interface SourceDocument {
  /** 0-based position of the document in its file. */
  readonly index: number;
  /** Plain JS value (null for an empty document). */
  readonly value: unknown;
  /** Where `path` is written, or its nearest written ancestor when the field is missing. */
  locate(path: FieldPath): Position;
}

export interface ParsedText {
  readonly documents: readonly SourceDocument[];
  /** Syntax errors; when there are any, `documents` must not be used. */
  readonly errors: readonly ConfigIssue[];
}

export function parseConfigText(text: string): ParsedText {
  const lineCounter = new LineCounter();
  // prettyErrors off: we report line/column ourselves and keep messages to one line.
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const position = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  // parseAllDocuments returns an EmptyStream (not an array) for text without documents.
  if (!Array.isArray(docs)) return { documents: [], errors: [] };

  const errors: ConfigIssue[] = [];
  const documents: SourceDocument[] = [];
  docs.forEach((doc, index) => {
    for (const e of doc.errors) errors.push({ ...position(e.pos[0]), message: e.message });
    if (doc.errors.length > 0) return;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      errors.push({
        ...position(doc.contents?.range[0] ?? 0),
        message: e instanceof Error ? e.message : String(e),
      });
      return;
    }
    documents.push({ index, value, locate: (path) => locateIn(doc, path, position) });
  });
  return { documents, errors };
}

function locateIn(doc: Document, path: FieldPath, position: (offset: number) => Position): Position {
  let node: unknown = doc.contents;
  let best = position(rangeStart(node) ?? 0);
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      // The key's line: for a nested block that is the `ports:` line, not the first line below it.
      best = position(rangeStart(pair.key) ?? rangeStart(pair.value) ?? 0);
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      const start = rangeStart(item);
      if (start === undefined) break;
      best = position(start);
      node = item;
    } else {
      break;
    }
  }
  return best;
}

function rangeStart(node: unknown): number | undefined {
  return (node as Node | null | undefined)?.range?.[0];
}
