// The certificate service's messages, from certificate-service.proto (loaded at run time with
// protobufjs; google.protobuf.Struct comes from protobufjs's built-in well-known types).
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';

export const CREATE_CERTIFICATE_PATH = '/istio.v1.auth.IstioCertificateService/CreateCertificate';

export interface CertificateRequest {
  readonly csr: string;
  readonly validityDuration: number;
}

export interface CertificateResponse {
  readonly certChain: string[];
}

let types: { request: protobuf.Type; response: protobuf.Type } | undefined;

function load(): { request: protobuf.Type; response: protobuf.Type } {
  if (types) return types;
  const text = readFileSync(new URL('../../ca/certificate-service.proto', import.meta.url), 'utf8');
  const root = new protobuf.Root();
  const struct = protobuf.common.get('google/protobuf/struct.proto');
  if (struct) root.addJSON(struct.nested ?? {});
  protobuf.parse(text, root, { keepCase: false });
  root.resolveAll();
  types = {
    request: root.lookupType('istio.v1.auth.IstioCertificateRequest'),
    response: root.lookupType('istio.v1.auth.IstioCertificateResponse'),
  };
  return types;
}

export function decodeCertificateRequest(bytes: Buffer): CertificateRequest {
  const msg = load().request.toObject(load().request.decode(bytes), { longs: Number, defaults: true }) as {
    csr: string;
    validityDuration: number;
  };
  return { csr: msg.csr, validityDuration: msg.validityDuration };
}

export function encodeCertificateRequest(req: CertificateRequest): Buffer {
  const type = load().request;
  return Buffer.from(type.encode(type.fromObject(req)).finish());
}

export function encodeCertificateResponse(res: CertificateResponse): Buffer {
  const type = load().response;
  return Buffer.from(type.encode(type.fromObject(res)).finish());
}

export function decodeCertificateResponse(bytes: Buffer): CertificateResponse {
  const type = load().response;
  const msg = type.toObject(type.decode(bytes), { defaults: true }) as { certChain: string[] };
  return { certChain: msg.certChain };
}
