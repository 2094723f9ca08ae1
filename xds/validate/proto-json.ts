// Proto3 JSON (what Envoy reads from a bootstrap file: `"@type"` Anys, "1s" durations, plain
// Struct and wrapper values) turned into protobufjs object form, so JSON config can be encoded and
// validated like any generated resource. Field names are snake_case, as Portolan writes them.
import protobuf from 'protobufjs';
import { messageType, protoRoot } from '../proto/protos.js';

export function fromProtoJson(typeName: string, json: unknown): Record<string, unknown> {
  return convertMessage(messageType(typeName), json, typeName);
}

const WRAPPERS = /^google\.protobuf\.(Double|Float|Int64|UInt64|Int32|UInt32|Bool|String|Bytes)Value$/;

function convertMessage(type: protobuf.Type, json: unknown, path: string): Record<string, unknown> {
  const full = type.fullName.slice(1);
  if (full === 'google.protobuf.Any') return packAny(json, path);
  if (full === 'google.protobuf.Duration') return duration(json, path);
  if (full === 'google.protobuf.Struct') return struct(json);
  if (full === 'google.protobuf.Value') return value(json);
  if (WRAPPERS.test(full)) return { value: json };
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error(`${path}: expected an object for ${full}`);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(json)) {
    const field = type.fields[key];
    if (!field) throw new Error(`${path}.${key}: no such field in ${full}`);
    field.resolve();
    const convert = (x: unknown, p: string): unknown =>
      field.resolvedType instanceof protobuf.Type ? convertMessage(field.resolvedType, x, p) : x;
    if (field.map)
      out[key] = Object.fromEntries(
        Object.entries(v as object).map(([k, x]) => [k, convert(x, `${path}.${key}[${k}]`)]),
      );
    else if (field.repeated) out[key] = (v as unknown[]).map((x, i) => convert(x, `${path}.${key}[${i}]`));
    else out[key] = convert(v, `${path}.${key}`);
  }
  return out;
}

function packAny(json: unknown, path: string): Record<string, unknown> {
  const { '@type': typeUrl, ...rest } = json as { '@type'?: string };
  if (typeof typeUrl !== 'string') throw new Error(`${path}: an Any needs "@type"`);
  const type = protoRoot().lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  const message = type.fromObject(convertMessage(type, rest, path));
  return { type_url: typeUrl, value: type.encode(message).finish() };
}

function duration(json: unknown, path: string): Record<string, unknown> {
  const m = typeof json === 'string' ? /^(-?)(\d+)(?:\.(\d{1,9}))?s$/.exec(json) : null;
  if (!m) throw new Error(`${path}: a duration is a string like "1.5s", got ${JSON.stringify(json)}`);
  const sign = m[1] === '-' ? -1 : 1;
  return { seconds: sign * Number(m[2]), nanos: sign * Number((m[3] ?? '').padEnd(9, '0')) };
}

function struct(json: unknown): Record<string, unknown> {
  return { fields: Object.fromEntries(Object.entries(json as object).map(([k, v]) => [k, value(v)])) };
}

// Struct's Value comes from protobufjs's built-in types: camelCase field names.
function value(v: unknown): Record<string, unknown> {
  if (v === null) return { nullValue: 0 };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
  return { structValue: struct(v) };
}
