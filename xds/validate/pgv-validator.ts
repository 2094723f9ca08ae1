// A validator of the protoc-gen-validate `(validate.rules)` annotations in Envoy's own .proto files,
// read through protobufjs reflection: the same rules Envoy applies when it accepts config. It checks
// decoded messages (what went over the wire), recursing into nested messages and google.protobuf.Any.
// Covered: string (len, min/max_len, min/max_bytes, prefix, suffix, contains, pattern, const, in,
// not_in, non-strict header well-known regexes), bytes lengths, numbers (const, lt, lte, gt, gte, in,
// not_in), enum (defined_only, const, in, not_in), duration (required, const, lt, lte, gt, gte),
// message (required, skip), repeated (min/max_items, unique, items), map (min/max_pairs, keys,
// values), any (required, in, not_in), oneof `(validate.required)`, and wrapper types carrying
// scalar rules. Not covered (Envoy's protos barely use them): timestamp rules, ip/email/uri formats.
import protobuf from 'protobufjs';
import { messageType, protoRoot } from '../proto/protos.js';

export interface Violation {
  /** Field path from the validated message, e.g. `filter_chains[0].filters[0].typed_config.stat_prefix`. */
  readonly path: string;
  readonly message: string;
}

type Rules = Record<string, unknown>;

/** Validates an encoded message of `typeName` (e.g. `envoy.config.cluster.v3.Cluster`). */
export function validateEncoded(typeName: string, bytes: Uint8Array): Violation[] {
  const type = messageType(typeName);
  return validateMessage(type, type.decode(bytes), '');
}

/** Validates a message in protobufjs object form, as it would be after encoding (unknown fields are dropped). */
export function validateObject(typeName: string, object: object): Violation[] {
  const type = messageType(typeName);
  return validateEncoded(typeName, type.encode(type.fromObject(object)).finish());
}

const WRAPPERS = new Set([
  'google.protobuf.DoubleValue',
  'google.protobuf.FloatValue',
  'google.protobuf.Int64Value',
  'google.protobuf.UInt64Value',
  'google.protobuf.Int32Value',
  'google.protobuf.UInt32Value',
  'google.protobuf.BoolValue',
  'google.protobuf.StringValue',
  'google.protobuf.BytesValue',
]);

export function validateMessage(type: protobuf.Type, msg: protobuf.Message, path: string): Violation[] {
  const out: Violation[] = [];
  if (messageOption(type, '(validate.disabled)') || messageOption(type, '(validate.ignored)')) return out;
  const values = msg as unknown as Record<string, unknown>;
  for (const oneof of type.oneofsArray) {
    if (oneofRequired(oneof) && !oneof.fieldsArray.some((f) => isSet(values, f))) {
      out.push({ path: join(path, oneof.name), message: `one of ${oneof.oneof.join(', ')} is required` });
    }
  }
  for (const field of type.fieldsArray) {
    field.resolve();
    const rules = fieldRules(field);
    const fieldPath = join(path, field.name);
    const set = isSet(values, field);
    const value = values[field.name];
    if (field.map) {
      if (rules) checkMap(field, rules, value as Record<string, unknown> | undefined, fieldPath, out);
      for (const [k, v] of Object.entries((value as Record<string, unknown> | undefined) ?? {}))
        checkElement(field, undefined, v, `${fieldPath}[${k}]`, out);
      continue;
    }
    if (field.repeated) {
      const list = (value as unknown[] | undefined) ?? [];
      if (rules?.repeated) checkRepeated(rules.repeated as Rules, list, fieldPath, out);
      const items = (rules?.repeated as Rules | undefined)?.items as Rules | undefined;
      list.forEach((v, i) => checkElement(field, items, v, `${fieldPath}[${i}]`, out));
      continue;
    }
    // Proto3 scalars outside a oneof carry no presence: their rules apply to the default value too.
    if (!set && field.resolvedType instanceof protobuf.Type) {
      // A oneof member's rules apply only when it is the member that is set.
      if (rules && requiredMessage(rules) && !field.partOf)
        out.push({ path: fieldPath, message: 'is required' });
      continue;
    }
    if (!set && field.partOf) continue;
    checkElement(field, rules, set ? value : field.typeDefault, fieldPath, out);
  }
  return out;
}

/** Checks one value of `field` (a singular value, a list item, or a map value) against `rules`. */
function checkElement(
  field: protobuf.Field,
  rules: Rules | undefined,
  value: unknown,
  path: string,
  out: Violation[],
): void {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) {
    const message = value as protobuf.Message;
    const full = resolved.fullName.slice(1);
    if (rules) checkMessageRules(full, rules, message, path, out);
    if ((rules?.message as Rules | undefined)?.skip === true) return;
    if (full === 'google.protobuf.Any') {
      checkAny(message as unknown as { type_url?: string; value?: Uint8Array }, path, out);
      return;
    }
    out.push(...validateMessage(resolved, message, path));
    return;
  }
  if (resolved instanceof protobuf.Enum) {
    if (rules?.enum) checkEnum(resolved, rules.enum as Rules, value as number, path, out);
    return;
  }
  if (!rules) return;
  if (typeof value === 'string' && rules.string) checkString(rules.string as Rules, value, path, out);
  else if (value instanceof Uint8Array && rules.bytes) checkBytes(rules.bytes as Rules, value, path, out);
  else checkNumber(rules, value, path, out);
}

function checkMessageRules(
  typeName: string,
  rules: Rules,
  message: protobuf.Message,
  path: string,
  out: Violation[],
): void {
  const m = message as unknown as Record<string, unknown>;
  if (typeName === 'google.protobuf.Duration' && rules.duration) {
    checkDuration(rules.duration as Rules, m, path, out);
  } else if (typeName === 'google.protobuf.Any' && rules.any) {
    const any = rules.any as Rules;
    const url = typeof m.type_url === 'string' ? m.type_url : '';
    if (Array.isArray(any.in) && !any.in.includes(url))
      out.push({ path, message: `type ${url} is not allowed` });
    if (Array.isArray(any.not_in) && any.not_in.includes(url))
      out.push({ path, message: `type ${url} is not allowed` });
  } else if (WRAPPERS.has(typeName)) {
    // A wrapper carries the rules of the scalar it wraps (e.g. `(validate.rules).uint32.gte` on UInt32Value).
    const v = m.value ?? 0;
    if (typeof v === 'string' && rules.string) checkString(rules.string as Rules, v, path, out);
    else if (v instanceof Uint8Array && rules.bytes) checkBytes(rules.bytes as Rules, v, path, out);
    else checkNumber(rules, v, path, out);
  }
}

function checkAny(any: { type_url?: string; value?: Uint8Array }, path: string, out: Violation[]): void {
  const url = any.type_url ?? '';
  if (!url) return;
  const typeName = url.slice(url.lastIndexOf('/') + 1);
  let type: protobuf.Type;
  try {
    type = protoRoot().lookupType(typeName);
  } catch {
    out.push({
      path,
      message: `unknown type ${url}: cannot be checked (is its .proto in xds/proto/protos.json?)`,
    });
    return;
  }
  let decoded: protobuf.Message;
  try {
    decoded = type.decode(any.value ?? new Uint8Array());
  } catch (err) {
    out.push({
      path,
      message: `does not decode as ${typeName}: ${err instanceof Error ? err.message : String(err)}`,
    });
    return;
  }
  out.push(...validateMessage(type, decoded, path));
}

function checkString(r: Rules, s: string, path: string, out: Violation[]): void {
  const chars = [...s].length;
  const bytes = Buffer.byteLength(s, 'utf8');
  const fail = (message: string): void => {
    out.push({
      path,
      message: `${message}, got ${JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s)}`,
    });
  };
  if (r.const !== undefined && s !== r.const) fail(`must equal ${JSON.stringify(r.const)}`);
  if (r.len !== undefined && chars !== Number(r.len)) fail(`must be ${show(r.len)} characters`);
  if (r.min_len !== undefined && chars < Number(r.min_len))
    fail(`must be at least ${show(r.min_len)} characters`);
  if (r.max_len !== undefined && chars > Number(r.max_len))
    fail(`must be at most ${show(r.max_len)} characters`);
  if (r.min_bytes !== undefined && bytes < Number(r.min_bytes))
    fail(`must be at least ${show(r.min_bytes)} bytes`);
  if (r.max_bytes !== undefined && bytes > Number(r.max_bytes))
    fail(`must be at most ${show(r.max_bytes)} bytes`);
  if (typeof r.prefix === 'string' && !s.startsWith(r.prefix)) fail(`must start with ${r.prefix}`);
  if (typeof r.suffix === 'string' && !s.endsWith(r.suffix)) fail(`must end with ${r.suffix}`);
  if (typeof r.contains === 'string' && !s.includes(r.contains)) fail(`must contain ${r.contains}`);
  if (typeof r.pattern === 'string' && !new RegExp(r.pattern, 'u').test(s)) fail(`must match ${r.pattern}`);
  if (Array.isArray(r.in) && !r.in.includes(s)) fail(`must be one of ${r.in.join(', ')}`);
  if (Array.isArray(r.not_in) && r.not_in.includes(s)) fail(`must not be one of ${r.not_in.join(', ')}`);
  // Envoy's headers use these with strict: false, which only forbids NUL, CR and LF.
  if (
    (r.well_known_regex === 'HTTP_HEADER_NAME' || r.well_known_regex === 'HTTP_HEADER_VALUE') &&
    /[\0\r\n]/.test(s)
  )
    fail('must not contain NUL, CR or LF');
}

function checkBytes(r: Rules, b: Uint8Array, path: string, out: Violation[]): void {
  if (r.len !== undefined && b.length !== Number(r.len))
    out.push({ path, message: `must be ${show(r.len)} bytes` });
  if (r.min_len !== undefined && b.length < Number(r.min_len))
    out.push({ path, message: `must be at least ${show(r.min_len)} bytes` });
  if (r.max_len !== undefined && b.length > Number(r.max_len))
    out.push({ path, message: `must be at most ${show(r.max_len)} bytes` });
}

const NUMBER_KINDS = [
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
];

function checkNumber(rules: Rules, value: unknown, path: string, out: Violation[]): void {
  const kind = NUMBER_KINDS.find((k) => rules[k] !== undefined);
  if (!kind) return;
  checkBounds(rules[kind] as Rules, toNumber(value), path, out, String);
}

function checkBounds(r: Rules, n: number, path: string, out: Violation[], show: (n: number) => string): void {
  const bound = (key: string): number | undefined =>
    r[key] === undefined ? undefined : toNumberBound(r[key]);
  const fail = (message: string): void => {
    out.push({ path, message: `${message}, got ${show(n)}` });
  };
  const [lt, lte, gt, gte, c] = [bound('lt'), bound('lte'), bound('gt'), bound('gte'), bound('const')];
  if (c !== undefined && n !== c) fail(`must equal ${show(c)}`);
  // PGV: gt > lt means "outside the range" (exclusive); handle the common in-range form and that one.
  const lower = gt !== undefined ? n > gt : gte !== undefined ? n >= gte : true;
  const upper = lt !== undefined ? n < lt : lte !== undefined ? n <= lte : true;
  const lowBound = gt ?? gte;
  const highBound = lt ?? lte;
  if (lowBound !== undefined && highBound !== undefined && lowBound > highBound) {
    if (!lower && !upper) fail(`must be outside (${show(highBound)}, ${show(lowBound)})`);
    return;
  }
  if (!lower)
    fail(gt !== undefined ? `must be greater than ${show(gt)}` : `must be at least ${show(gte ?? 0)}`);
  if (!upper) fail(lt !== undefined ? `must be less than ${show(lt)}` : `must be at most ${show(lte ?? 0)}`);
  if (Array.isArray(r.in) && !r.in.map(toNumberBound).includes(n)) fail(`must be one of ${r.in.join(', ')}`);
  if (Array.isArray(r.not_in) && r.not_in.map(toNumberBound).includes(n))
    fail(`must not be ${r.not_in.join(', ')}`);
}

function checkDuration(r: Rules, m: Record<string, unknown>, path: string, out: Violation[]): void {
  checkBounds(r, durationSeconds(m), path, out, (s) => `${s}s`);
}

function checkEnum(e: protobuf.Enum, r: Rules, value: number, path: string, out: Violation[]): void {
  const defined = Object.values(e.values).includes(value);
  if (r.defined_only === true && !defined)
    out.push({ path, message: `${value} is not a defined value of ${e.name}` });
  if (r.const !== undefined && value !== Number(r.const))
    out.push({ path, message: `must be ${show(r.const)}` });
  if (Array.isArray(r.in) && !r.in.map(Number).includes(value))
    out.push({ path, message: `${value} is not allowed` });
  if (Array.isArray(r.not_in) && r.not_in.map(Number).includes(value))
    out.push({ path, message: `${value} is not allowed` });
}

function checkRepeated(r: Rules, list: readonly unknown[], path: string, out: Violation[]): void {
  if (r.min_items !== undefined && list.length < Number(r.min_items))
    out.push({ path, message: `must have at least ${show(r.min_items)} items, has ${list.length}` });
  if (r.max_items !== undefined && list.length > Number(r.max_items))
    out.push({ path, message: `must have at most ${show(r.max_items)} items, has ${list.length}` });
  if (r.unique === true) {
    const seen = new Set(
      list.map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : JSON.stringify(v))),
    );
    if (seen.size !== list.length) out.push({ path, message: 'items must be unique' });
  }
}

function checkMap(
  field: protobuf.Field,
  rules: Rules,
  map: Record<string, unknown> | undefined,
  path: string,
  out: Violation[],
): void {
  const r = rules.map as Rules | undefined;
  if (!r) return;
  const entries = Object.entries(map ?? {});
  if (r.min_pairs !== undefined && entries.length < Number(r.min_pairs))
    out.push({ path, message: `must have at least ${show(r.min_pairs)} entries` });
  if (r.max_pairs !== undefined && entries.length > Number(r.max_pairs))
    out.push({ path, message: `must have at most ${show(r.max_pairs)} entries` });
  const keys = r.keys as Rules | undefined;
  if (keys?.string) for (const [k] of entries) checkString(keys.string as Rules, k, `${path}[${k}]`, out);
  const values = r.values as Rules | undefined;
  if (values) for (const [k, v] of entries) checkElement(field, values, v, `${path}[${k}]`, out);
}

// ---- reflection helpers -------------------------------------------------------------------------

const rulesCache = new WeakMap<protobuf.Field, Rules | null>();

/** The merged `(validate.rules)` of a field: protobufjs keeps one parsedOptions entry per option line. */
function fieldRules(field: protobuf.Field): Rules | undefined {
  const cached = rulesCache.get(field);
  if (cached !== undefined) return cached ?? undefined;
  let merged: Rules | undefined;
  for (const entry of (field.parsedOptions ?? []) as Record<string, unknown>[]) {
    const r = entry['(validate.rules)'];
    if (r && typeof r === 'object') merged = deepMerge(merged ?? {}, r as Rules);
  }
  rulesCache.set(field, merged ?? null);
  return merged;
}

function deepMerge(a: Rules, b: Rules): Rules {
  const out: Rules = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      prev &&
      typeof prev === 'object' &&
      !Array.isArray(prev) &&
      v &&
      typeof v === 'object' &&
      !Array.isArray(v)
        ? deepMerge(prev as Rules, v as Rules)
        : v;
  }
  return out;
}

function requiredMessage(rules: Rules): boolean {
  const kinds = ['message', 'duration', 'any', 'timestamp'];
  return kinds.some((k) => (rules[k] as Rules | undefined)?.required === true);
}

function oneofRequired(oneof: protobuf.OneOf): boolean {
  if (oneof.options?.['(validate.required)'] === true) return true;
  return ((oneof.parsedOptions ?? []) as Record<string, unknown>[]).some(
    (o) => o['(validate.required)'] === true,
  );
}

function messageOption(type: protobuf.Type, name: string): boolean {
  if (type.options?.[name] === true) return true;
  return ((type.parsedOptions ?? []) as Record<string, unknown>[]).some((o) => o[name] === true);
}

/** Set on the wire: protobufjs decodes only present fields as own properties. */
function isSet(values: Record<string, unknown>, field: protobuf.Field): boolean {
  if (!Object.hasOwn(values, field.name)) return false;
  const v = values[field.name];
  if (v === null || v === undefined) return false;
  if (field.repeated) return (v as unknown[]).length > 0;
  return true;
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value);
  if (value && typeof value === 'object' && 'low' in value && 'high' in value) {
    const long = value as { low: number; high: number; unsigned?: boolean };
    return new protobuf.util.LongBits(long.low >>> 0, long.high >>> 0).toNumber(long.unsigned ?? false);
  }
  return 0;
}

/** A bound in the options is a plain number, or a Duration `{seconds, nanos}` (`gt: {}` is zero). */
function toNumberBound(v: unknown): number {
  if (v && typeof v === 'object' && !('low' in v)) return durationSeconds(v as Record<string, unknown>);
  return toNumber(v);
}

function durationSeconds(m: Record<string, unknown>): number {
  return toNumber(m.seconds ?? 0) + toNumber(m.nanos ?? 0) / 1e9;
}

function show(v: unknown): string {
  return JSON.stringify(v) ?? '';
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}
