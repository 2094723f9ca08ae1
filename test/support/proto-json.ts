// Proto3 JSON of an encoded xDS resource, for golden files a person reviews: Anys expanded with their
// "@type", durations as "1.5s", wrappers as bare values, Structs as plain JSON, enums by name,
// 64-bit integers and bytes as strings. Field names stay snake_case (the original proto names, which
// every proto JSON parser accepts and Envoy's docs use); fields appear in .proto declaration order
// and map keys are sorted, so the text is stable. xds/validate/proto-json.ts reads this form back.
import protobuf from 'protobufjs';
import { messageType, TO_OBJECT } from '../../xds/proto/protos.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = Record<string, unknown>;

/** The proto JSON of `value`, an encoded message of `typeUrl` (a type.googleapis.com/... URL). */
export function toProtoJson(typeUrl: string, value: Uint8Array): { [key: string]: Json } {
  const type = messageType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  const json = message(type, type.toObject(type.decode(value), TO_OBJECT));
  return wrapAny(typeUrl, type, json);
}

const WRAPPERS = /^google\.protobuf\.(Double|Float|Int64|UInt64|Int32|UInt32|Bool|String|Bytes)Value$/;
const LONGS = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

function message(type: protobuf.Type, obj: Obj): Json {
  const full = type.fullName.slice(1);
  if (full === 'google.protobuf.Any') return any(obj);
  if (full === 'google.protobuf.Duration') return duration(obj);
  if (full === 'google.protobuf.Struct') return struct(type, obj);
  if (full === 'google.protobuf.Value') return structValue(type, obj);
  if (full === 'google.protobuf.ListValue') return listValue(type, obj);
  if (WRAPPERS.test(full)) {
    const field = type.fieldsArray[0] as protobuf.Field;
    return (obj[field.name] as Json | undefined) ?? scalarDefault(field);
  }
  const out: { [key: string]: Json } = {};
  for (const field of type.fieldsArray) {
    const v = obj[field.name];
    if (v === undefined || v === null) continue;
    field.resolve();
    const convert = (x: unknown): Json =>
      field.resolvedType instanceof protobuf.Type ? message(field.resolvedType, x as Obj) : (x as Json);
    if (field.map)
      out[field.name] = Object.fromEntries(
        Object.keys(v as Obj)
          .sort()
          .map((k) => [k, convert((v as Obj)[k])]),
      );
    else if (field.repeated) out[field.name] = (v as unknown[]).map(convert);
    else out[field.name] = convert(v);
  }
  return out;
}

function any(obj: Obj): Json {
  const typeUrl = typeof obj.type_url === 'string' ? obj.type_url : '';
  if (!typeUrl) return {};
  return toProtoJson(typeUrl, Buffer.from(typeof obj.value === 'string' ? obj.value : '', 'base64'));
}

/** Proto JSON puts a message's fields beside "@type", and a well-known type's JSON under "value". */
function wrapAny(typeUrl: string, type: protobuf.Type, json: Json): { [key: string]: Json } {
  const special = type.fullName.startsWith('.google.protobuf.') && type.fullName !== '.google.protobuf.Empty';
  if (special || json === null || typeof json !== 'object' || Array.isArray(json))
    return { '@type': typeUrl, value: json };
  return { '@type': typeUrl, ...json };
}

function duration(obj: Obj): string {
  // longs: String in TO_OBJECT, so seconds arrives as a decimal string.
  const seconds = BigInt(
    typeof obj.seconds === 'string' || typeof obj.seconds === 'number' ? obj.seconds : 0,
  );
  const nanos = Number(obj.nanos ?? 0);
  const negative = seconds < 0n || nanos < 0;
  const abs = (n: bigint): bigint => (n < 0n ? -n : n);
  const fraction = String(Math.abs(nanos)).padStart(9, '0');
  // 0, 3, 6 or 9 fractional digits, as the proto JSON mapping prints them.
  const digits =
    nanos === 0
      ? ''
      : fraction.endsWith('000000')
        ? fraction.slice(0, 3)
        : fraction.endsWith('000')
          ? fraction.slice(0, 6)
          : fraction;
  return `${negative ? '-' : ''}${abs(seconds)}${digits ? `.${digits}` : ''}s`;
}

// Struct, Value and ListValue come from protobufjs's built-in types (camelCase field names).
function struct(type: protobuf.Type, obj: Obj): Json {
  const fields = (obj.fields ?? {}) as Obj;
  const valueType = type.lookupType('Value');
  return Object.fromEntries(
    Object.keys(fields)
      .sort()
      .map((k) => [k, structValue(valueType, fields[k] as Obj)]),
  );
}

function structValue(type: protobuf.Type, obj: Obj): Json {
  if (obj.structValue !== undefined) return struct(type.lookupType('Struct'), obj.structValue as Obj);
  if (obj.listValue !== undefined) return listValue(type.lookupType('ListValue'), obj.listValue as Obj);
  if (obj.stringValue !== undefined) return obj.stringValue as string;
  if (obj.numberValue !== undefined) return obj.numberValue as number;
  if (obj.boolValue !== undefined) return obj.boolValue as boolean;
  return null;
}

function listValue(type: protobuf.Type, obj: Obj): Json {
  const valueType = type.lookupType('Value');
  return ((obj.values ?? []) as Obj[]).map((v) => structValue(valueType, v));
}

function scalarDefault(field: protobuf.Field): Json {
  if (field.type === 'bool') return false;
  if (field.type === 'string' || field.type === 'bytes') return '';
  return LONGS.has(field.type) ? '0' : 0;
}
