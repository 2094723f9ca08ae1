// Text → documents. YAML and JSON both go through a YAML 1.2 parser (JSON is YAML 1.2 flow syntax).
// The quick way (js-yaml, parse-quick.ts) reads most files; the precise way (the yaml library) keeps
// every document's node tree, so any field path maps back to a line, and words every error.
import {
  Composer,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  Parser,
  type Document,
  type Node,
} from 'yaml';
import type { ConfigIssue } from './issue.js';
import { quickParse } from './parse-quick.js';

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

/**
 * At most this many documents per file: a file of bare `---` lines would otherwise make millions of
 * empty documents out of a few MiB. Far above any real file (a `kind: List` counts as one).
 */
export const MAX_DOCUMENTS_PER_FILE = 1000;

export function parseConfigText(text: string, maxDocuments = MAX_DOCUMENTS_PER_FILE): ParsedText {
  return quickParse(text, maxDocuments, parsePrecisely) ?? parsePrecisely(text, maxDocuments);
}

/** The yaml library's parse: every node with its position, and errors in its words. */
export function parsePrecisely(text: string, maxDocuments = MAX_DOCUMENTS_PER_FILE): ParsedText {
  const lineCounter = new LineCounter();
  const position = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  // parseAllDocuments, one document at a time, so that counting can stop early. prettyErrors stay
  // off: we report line/column ourselves and keep messages to one line.
  const parser = new Parser(lineCounter.addNewLine);
  const composer = new Composer({ prettyErrors: false, uniqueKeys: true });

  const errors: ConfigIssue[] = [];
  const documents: SourceDocument[] = [];
  let index = 0;
  for (const doc of composer.compose(parser.parse(text))) {
    if (index === maxDocuments) {
      errors.push({
        ...position(doc.range[0]),
        message: `more than ${maxDocuments} documents in one file; split it`,
      });
      break;
    }
    const at = index++;
    for (const e of doc.errors) errors.push({ ...position(e.pos[0]), message: e.message });
    if (doc.errors.length > 0) continue;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      errors.push({
        ...position(doc.contents?.range[0] ?? 0),
        message: e instanceof Error ? e.message : String(e),
      });
      continue;
    }
    documents.push({ index: at, value, locate: (path) => locateIn(doc, path, position) });
  }
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
