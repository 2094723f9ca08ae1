// The workload side of the CA, shared by `portolan cert` and `portolan agent`: a key made locally (it
// never leaves the VM), a first certificate with a join token, then renewals at 80% of the lifetime
// with the current certificate. The pair and the trust bundle are replaced atomically
// (ca/cert-dir.ts), so Envoy's file-based SDS and gRPC's file_watcher provider never read a key with
// the wrong certificate. On start a pair that is unreadable, mismatched, expired or for another
// identity is not used: the join token is, when there is one.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { Backoff, type BackoffOptions } from '../model/backoff.js';
import { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE } from '../mesh/workload-certs.js';
import { requestCertificate } from './ca-client.js';
import { checkPair, readCertDir, repairCertDir, writeCertDir, type HeldCertificate } from './cert-dir.js';
import { createCsr } from './certificates.js';
import { parseSpiffeUri } from './identity.js';
import { generateKeyPair, privateKeyPem, type KeyAlgorithm } from './keys.js';
import { tokenIdentity } from './join-tokens.js';
import { explainConnectionError } from './connection-errors.js';

export { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE };
export type { HeldCertificate };

export interface AgentOptions {
  readonly caAddress: string;
  /** The trust bundle for first contact (from `portolan ca root`). */
  readonly rootCertFile: string;
  readonly outDir: string;
  readonly token?: string;
  readonly ttlSeconds?: number;
  readonly keyAlgorithm?: KeyAlgorithm;
  readonly logger: Logger;
  /** The identity this workload must have: a held certificate or a token for another is not used. */
  readonly identity?: string;
}

export interface Issued {
  readonly identity: string;
  readonly notAfter: Date;
  /** When the agent renews: 80% of the way from issuance to expiry. */
  readonly renewAt: Date;
  readonly cert: HeldCertificate;
}

/** Bad local state or input: nothing a retry would fix (no usable certificate and no token, …). */
export class AgentError extends Error {}

/** When to renew a certificate issued (or first seen) at `issuedAt`: 80% of the rest of its life. */
export function renewalTime(cert: HeldCertificate, issuedAt: Date): Date {
  const from = Math.min(Math.max(issuedAt.getTime(), cert.notBefore.getTime()), cert.notAfter.getTime());
  return new Date(from + (cert.notAfter.getTime() - from) * 0.8);
}

/** The certificate in `outDir` when it is usable for `options.identity` at `now`; logs why not. */
export function usableCertificate(options: AgentOptions, now = new Date()): HeldCertificate | undefined {
  const state = readCertDir(options.outDir);
  const log = options.logger;
  if (state.kind === 'empty') return undefined;
  if (state.kind === 'unusable') {
    log.warn(
      { dir: options.outDir, reason: state.reason },
      `the certificate files are unusable (${state.reason}): ${options.token ? 'enrolling with the join token' : 'no join token to enroll with'}`,
    );
    return undefined;
  }
  const { cert } = state;
  if (cert.notAfter <= now) {
    log.warn({ dir: options.outDir, notAfter: cert.notAfter }, 'the held certificate has expired');
    return undefined;
  }
  if (options.identity && cert.identity !== options.identity) {
    log.warn(
      { dir: options.outDir, held: cert.identity, wanted: options.identity },
      'the held certificate is for another identity',
    );
    return undefined;
  }
  return cert;
}

/** Gets one certificate: with the current one in outDir when it is usable, else with the token. */
export async function obtainCertificate(options: AgentOptions, now = new Date()): Promise<Issued> {
  repairCertDir(options.outDir);
  const current = usableCertificate(options, now);
  const identity = current?.identity ?? (options.token ? tokenIdentity(options.token) : undefined);
  if (!identity) {
    const state = readCertDir(options.outDir);
    const why = state.kind === 'unusable' ? ` (${state.reason})` : '';
    throw new AgentError(
      `no valid certificate in ${options.outDir}${why} and no join token (--token or PORTOLAN_JOIN_TOKEN): cannot authenticate to the CA`,
    );
  }
  if (options.identity && identity !== options.identity)
    throw new AgentError(`the join token is for ${identity}, not ${options.identity}`);
  // Once we hold a bundle from the CA it supersedes the first-contact root (it follows rotations).
  const rootPem = current?.bundlePem || readFileSync(options.rootCertFile, 'utf8');
  const keys = await generateKeyPair(options.keyAlgorithm ?? 'ec-p256');
  const result = await requestCertificate({
    address: options.caAddress,
    rootPem,
    csrPem: await createCsr(keys, identity),
    ...(options.ttlSeconds && { ttlSeconds: options.ttlSeconds }),
    ...(current
      ? { current: { certChainPem: current.chainPem, keyPem: current.keyPem } }
      : options.token && { token: options.token }),
    ...(parseSpiffeUri(identity) && { trustDomain: parseSpiffeUri(identity)?.trustDomain }),
  });
  const [leafPem, ...rest] = result.certChain;
  const rootOfChain = rest[rest.length - 1];
  if (!leafPem || !rootOfChain) throw new AgentError('the CA answered with an incomplete certificate chain');
  const files = {
    chainPem: [leafPem, ...rest.slice(0, -1)].join('\n'),
    keyPem: await privateKeyPem(keys.privateKey),
    bundlePem: result.trustBundle ?? rootOfChain,
  };
  const checked = checkPair(files);
  if (checked.kind !== 'held' || checked.cert.identity !== identity)
    throw new AgentError(
      `the CA answered with a certificate that is not ours: ${checked.kind === 'unusable' ? checked.reason : checked.kind === 'held' ? checked.cert.identity : 'empty'}`,
    );
  writeCertDir(options.outDir, files);
  const renewAt = renewalTime(checked.cert, now);
  options.logger.info(
    {
      identity,
      via: current ? 'certificate' : 'join token',
      notAfter: checked.cert.notAfter,
      renewAt,
      dir: options.outDir,
    },
    'certificate written',
  );
  return { identity, notAfter: checked.cert.notAfter, renewAt, cert: checked.cert };
}

/** A failed request is retried after 1 s, doubling to a minute. */
const RETRY_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.2 };

export interface KeeperStatus {
  /** `valid`: a certificate within its lifetime; `expired`: one past it; `none`: never had one. */
  readonly state: 'valid' | 'expired' | 'none';
  readonly identity?: string;
  readonly notAfter?: Date;
  readonly renewAt?: Date;
  /** The last failed request, until one succeeds. */
  readonly lastError?: { readonly message: string; readonly at: Date; readonly code?: number };
}

export interface KeeperOptions extends AgentOptions {
  /** Ask the CA at start even when the held certificate is fresh (`portolan cert` does). */
  readonly renewAtStart?: boolean;
  readonly backoff?: BackoffOptions;
}

/**
 * Keeps a workload certificate: uses a fresh one found on disk at once (an agent restarting while
 * the CA is down still has its identity), renews it at 80% of its life, retries failures with
 * backoff while the current one keeps being used, and tells listeners of every new certificate.
 */
export class CertificateKeeper {
  private held: HeldCertificate | undefined;
  private renewAt: Date | undefined;
  private lastError: KeeperStatus['lastError'];
  private readonly listeners = new Set<(cert: HeldCertificate) => void>();
  private readonly failureListeners = new Set<(error: NonNullable<KeeperStatus['lastError']>) => void>();
  private wake: (() => void) | undefined;

  constructor(private readonly options: KeeperOptions) {}

  /** Takes the certificate on disk when it is usable; returns it. */
  load(now = new Date()): HeldCertificate | undefined {
    repairCertDir(this.options.outDir);
    const cert = usableCertificate(this.options, now);
    if (cert) {
      this.held = cert;
      // The files' time is when it was issued, near enough (NotBefore is backdated).
      let writtenAt = now;
      try {
        writtenAt = statSync(join(this.options.outDir, CERT_CHAIN_FILE)).mtime;
      } catch {
        // read a moment ago; use now
      }
      this.renewAt = renewalTime(cert, writtenAt);
    }
    return cert;
  }

  /** The certificate in use (it may have expired: see status()). */
  current(): HeldCertificate | undefined {
    return this.held;
  }

  status(now = new Date()): KeeperStatus {
    const held = this.held;
    return {
      state: !held ? 'none' : held.notAfter > now ? 'valid' : 'expired',
      ...(held && { identity: held.identity, notAfter: held.notAfter }),
      ...(this.renewAt && { renewAt: this.renewAt }),
      ...(this.lastError && { lastError: this.lastError }),
    };
  }

  /** Calls `listener` with each new certificate; returns the unsubscribe function. */
  onChange(listener: (cert: HeldCertificate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls `listener` with each failed request (the current certificate, if any, stays in use). */
  onFailure(listener: (error: NonNullable<KeeperStatus['lastError']>) => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /** Renews now rather than at the scheduled time. */
  renewNow(): void {
    this.renewAt = new Date(0);
    this.wake?.();
  }

  /** Runs until `signal` aborts: obtain when due, wait, renew; failures retry with backoff. */
  async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.options.backoff ?? RETRY_BACKOFF);
    const log = this.options.logger;
    if (!this.options.renewAtStart && !this.held) this.load();
    let first = true;
    while (!signal.aborted) {
      const now = new Date();
      const due = (first && this.options.renewAtStart) || !this.held || !this.renewAt || this.renewAt <= now;
      first = false;
      let waitMs: number;
      if (!due) {
        waitMs = (this.renewAt?.getTime() ?? 0) - now.getTime();
      } else {
        try {
          const issued = await obtainCertificate({ ...this.options, ...this.keepIdentity() }, now);
          this.held = issued.cert;
          this.renewAt = issued.renewAt;
          this.lastError = undefined;
          backoff.reset();
          for (const l of this.listeners) l(issued.cert);
          continue;
        } catch (err) {
          const code = (err as { code?: number }).code;
          const details = (err as { details?: string }).details;
          const message =
            details === undefined
              ? (err as Error).message
              : explainConnectionError(details, this.options.caAddress);
          const error = { message, at: new Date(), ...(code !== undefined && { code }) };
          this.lastError = error;
          for (const l of this.failureListeners) l(error);
          waitMs = backoff.next();
          const held = this.held && this.held.notAfter > new Date() ? this.held : undefined;
          log.error(
            { err: message, code, retryInMs: waitMs, ...(held && { keepingUntil: held.notAfter }) },
            held
              ? 'certificate renewal failed: keeping the current certificate until it expires'
              : 'certificate request failed',
          );
        }
      }
      await this.sleep(Math.max(0, Math.min(waitMs, 2 ** 31 - 1)), signal);
    }
  }

  // Once a certificate is held, later requests must keep its identity.
  private keepIdentity(): { identity?: string } {
    const identity = this.options.identity ?? this.held?.identity;
    return identity ? { identity } : {};
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}

/** `portolan cert`: a certificate now, then renewals, until `signal` aborts. */
export async function runAgent(options: AgentOptions, signal: AbortSignal): Promise<void> {
  await new CertificateKeeper({ ...options, renewAtStart: true }).run(signal);
}
