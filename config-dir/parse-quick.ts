// The quick way through a config file: js-yaml reads a plain file about fifteen times faster than
// the yaml library builds its node tree, which is what a one-file edit spends most of its time on.
// It is only a way in: a file that uses what the two libraries might treat differently (anchors,
// aliases, tags, directives), or that js-yaml rejects, goes the precise way, which also words
// every error. A document's own position is kept as it is read; any deeper position (a field's
// line, for an error or a conflict) comes from the precise parse of the same text, made once and
// only when asked.
import { CORE_SCHEMA, loadAll, Type, type State } from 'js-yaml';
import type { FieldPath, ParsedText, Position, SourceDocument } from './parse.js';

// An anchor (&), alias (*) or tag (!) starts a node: at a line's start, or after a space or a flow
// indicator. `%` starts a directive. `? ` is an explicit key, and `]:` or `}:` a collection as a
// key: the libraries make different strings of such keys. A quoted "*.example.com" matches none of
// these, so wildcard hosts stay on the quick way; a false match only costs the precise parse.
const PRECISE_ONLY = /(?:^|[\s[{,])[&*!?]|^%|[\]}]\s*:/m;

// YAML 1.2's core schema as the yaml library reads it: js-yaml's own also takes 0b101 and `_` in
// some numbers, and leaves 1e400 and +.5 as strings.
const INT = new Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (s: string) => /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/.test(s),
  construct: (s: string) =>
    s.startsWith('0o')
      ? parseInt(s.slice(2), 8)
      : s.startsWith('0x')
        ? parseInt(s.slice(2), 16)
        : parseInt(s, 10),
});
const FLOAT = new Type('tag:yaml.org,2002:float', {
  kind: 'scalar',
  resolve: (s: string) =>
    /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/.test(
      s,
    ),
  construct: (s: string) =>
    /nan$/i.test(s) ? NaN : /inf$/i.test(s) ? (s.startsWith('-') ? -Infinity : Infinity) : parseFloat(s),
});
const SCHEMA = CORE_SCHEMA.extend({ implicit: [INT, FLOAT] });

/** The file read the quick way, or undefined: then the precise parse is the answer. */
export function quickParse(
  text: string,
  maxDocuments: number,
  precise: (text: string) => ParsedText,
): ParsedText | undefined {
  if (PRECISE_ONLY.test(text)) return undefined;
  // js-yaml drops a byte order mark before it reads: its columns on the first line are one short.
  const bom = text.startsWith('\ufeff');
  const roots: Position[] = [];
  let depth = 0;
  let values: unknown[];
  try {
    values = loadAll(text, undefined, {
      schema: SCHEMA,
      // Where each document's root node starts: its first node opened at depth 0.
      listener: (event: 'open' | 'close', state: State) => {
        if (event === 'close') depth -= 1;
        else if (depth++ === 0) roots.push(positionOf(state, bom));
      },
    });
  } catch {
    return undefined;
  }
  if (values.length > maxDocuments || roots.length !== values.length) return undefined;
  // A file of nothing but space and comments is no document to the yaml library, one empty document
  // to js-yaml: such files are cheap to read precisely.
  if (values.every((v) => v === null || v === undefined)) return undefined;
  let full: ParsedText | undefined;
  const preciseDocument = (index: number): SourceDocument | undefined => {
    full ??= precise(text);
    return full.errors.length === 0 ? full.documents.find((d) => d.index === index) : undefined;
  };
  return {
    errors: [],
    documents: values.map((value, index) => {
      const root = roots[index] ?? { line: 1, column: 1 };
      return {
        index,
        value: value ?? null,
        locate: (path: FieldPath) =>
          path.length === 0 ? root : (preciseDocument(index)?.locate(path) ?? root),
      };
    }),
  };
}

function positionOf(state: State, bom: boolean): Position {
  const shift = bom && state.line === 0 ? 2 : 1;
  return { line: state.line + 1, column: state.position - state.lineStart + shift };
}
