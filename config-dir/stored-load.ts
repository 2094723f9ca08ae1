// A file's load (its validated resources and warnings) as the store keeps it, so a restart takes a
// file whose text is the store's last accepted one without parsing and validating it again
// (model/accepted-files.ts). Exactness over reach: a load is stored only when JSON gives it back as
// it was (plain objects, arrays, strings, finite numbers, booleans), and only for the build that
// made it — `loadFormat()` hashes the code that parses and validates — so an upgrade or any edit of
// a validator parses every file once, as a cold start does.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sha256 } from '../model/sha256.js';
import { resourceKey, type AnyConfigResource } from '../mesh/types.js';
import type { ConfigIssue } from './issue.js';
import { loadConfigFile, type FileLoad } from './load-file.js';

interface Stored {
  readonly resources: readonly AnyConfigResource[];
  readonly warnings: readonly ConfigIssue[];
}

/** Not what JSON gives back as it was: such a load is not stored (the file is parsed at start). */
class NotPlain extends Error {}

let format: string | undefined;

/** The build that parses and validates: this module's folder's load-file and parse code, and validate/. */
export function loadFormat(): string {
  if (format !== undefined) return format;
  const here = new URL('./', import.meta.url);
  const files = ['load-file.js', 'parse.js', 'parse-quick.js', 'stored-load.js'].map((f) => new URL(f, here));
  const validate = new URL('./validate/', here);
  let names: string[] = [];
  try {
    names = readdirSync(fileURLToPath(validate)).filter((n) => n.endsWith('.js'));
  } catch {
    // not laid out as built: the hash of what is found still tells builds apart
  }
  const parts = [...files, ...names.sort().map((n) => new URL(n, validate))].map((url) => {
    try {
      return readFileSync(url, 'utf8');
    } catch {
      return '';
    }
  });
  format = `1:${sha256(parts.join('\0'), 'hex').slice(0, 32)}`;
  return format;
}

/** `load` as stored, or undefined when JSON would not give it back as it is. */
export function encodeLoad(load: FileLoad): string | undefined {
  if (load.errors.length > 0) return undefined;
  const stored: Stored = { resources: load.resources, warnings: load.warnings };
  try {
    return JSON.stringify(stored, plainOnly);
  } catch (e) {
    if (e instanceof NotPlain) return undefined;
    throw e;
  }
}

/**
 * The load of `text` (the store's last accepted text of `path`) from its stored form; undefined if
 * that does not decode. A host's line (asked only to report a conflict) comes from a parse then.
 */
export function decodeLoad(path: string, text: string, json: string): FileLoad | undefined {
  let stored: Stored;
  try {
    stored = JSON.parse(json) as Stored;
  } catch {
    return undefined;
  }
  if (!Array.isArray(stored.resources) || !Array.isArray(stored.warnings)) return undefined;
  let parsed: FileLoad | undefined;
  return {
    path,
    errors: [],
    warnings: stored.warnings,
    resources: stored.resources,
    hostPosition: (resource, i) => {
      parsed ??= loadConfigFile(path, text, { lenient: true });
      const key = resourceKey(resource);
      const same = parsed.resources.find((r) => r.kind === resource.kind && resourceKey(r) === key);
      return same && parsed.hostPosition(same, i);
    },
  };
}

function plainOnly(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new NotPlain();
  if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol')
    throw new NotPlain();
  if (value === undefined && Array.isArray(this)) throw new NotPlain();
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new NotPlain();
  }
  // The holder's own value, before any toJSON: a Date is not plain either.
  const own: unknown = this && typeof this === 'object' ? (this as Record<string, unknown>)[key] : value;
  if (own instanceof Date) throw new NotPlain();
  return value;
}
