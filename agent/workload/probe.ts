// The WorkloadGroup's readiness probe, run by the agent against the local application: one check
// (httpGet, tcpSocket, grpc, exec) with its timeout, and the thresholds that turn checks into a
// state, as Kubernetes and Istio count them. Each check is bounded by the probe's timeout.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { ReadinessProbe } from '../../mesh/types.js';
import { childEnv } from '../child-env.js';

export interface CheckResult {
  readonly ok: boolean;
  /** Why not, when it failed. */
  readonly message: string;
}

/** Istio's defaults for fields left 0 or unset. */
export const PROBE_DEFAULTS = {
  timeoutSeconds: 1,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
} as const;

/** Runs the probe's check once; `host` is where the application listens when the probe names none. */
export function checkOnce(probe: ReadinessProbe, host: string): Promise<CheckResult> {
  const timeoutMs = (probe.timeoutSeconds || PROBE_DEFAULTS.timeoutSeconds) * 1000;
  if (probe.tcpSocket) return tcpCheck(probe.tcpSocket.host || host, probe.tcpSocket.port, timeoutMs);
  if (probe.httpGet) return httpCheck(probe.httpGet, host, timeoutMs);
  if (probe.grpc) return grpcCheck(host, probe.grpc.port, probe.grpc.service ?? '', timeoutMs);
  if (probe.exec) return execCheck(probe.exec.command, timeoutMs);
  return Promise.resolve({ ok: false, message: 'the probe has no check (httpGet, tcpSocket, grpc, exec)' });
}

function target(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function tcpCheck(host: string, port: number, timeoutMs: number): Promise<CheckResult> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (result: CheckResult): void => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () =>
      done({ ok: false, message: `tcp ${target(host, port)}: no connection within ${timeoutMs} ms` }),
    );
    socket.once('connect', () => done({ ok: true, message: '' }));
    socket.once('error', (err) => done({ ok: false, message: `tcp ${target(host, port)}: ${err.message}` }));
  });
}

function httpCheck(
  get: NonNullable<ReadinessProbe['httpGet']>,
  defaultHost: string,
  timeoutMs: number,
): Promise<CheckResult> {
  const host = get.host || defaultHost;
  const https = get.scheme === 'HTTPS';
  const url = `${https ? 'https' : 'http'}://${target(host, get.port)}${get.path || '/'}`;
  return new Promise((resolve) => {
    const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value ?? '']));
    // As Kubernetes: an HTTPS probe does not verify the certificate; 200..399 is success.
    const req = (https ? httpsRequest : httpRequest)(url, {
      method: 'GET',
      headers,
      timeout: timeoutMs,
      ...(https && { rejectUnauthorized: false }),
    });
    req.once('response', (res) => {
      res.resume();
      const code = res.statusCode ?? 0;
      resolve(
        code >= 200 && code < 400
          ? { ok: true, message: '' }
          : { ok: false, message: `GET ${url}: HTTP ${code}` },
      );
    });
    req.once('timeout', () => {
      req.destroy();
      resolve({ ok: false, message: `GET ${url}: no answer within ${timeoutMs} ms` });
    });
    req.once('error', (err) => resolve({ ok: false, message: `GET ${url}: ${err.message}` }));
    req.end();
  });
}

const identity = (b: Buffer): Buffer => b;

/** grpc.health.v1.Health/Check: HealthCheckRequest{service=1}, HealthCheckResponse{status=1}, SERVING is 1. */
function grpcCheck(host: string, port: number, service: string, timeoutMs: number): Promise<CheckResult> {
  const address = target(host, port);
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const name = Buffer.from(service, 'utf8');
  const request = service ? Buffer.concat([Buffer.from([0x0a, name.length]), name]) : Buffer.alloc(0);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      identity,
      identity,
      request,
      { deadline: Date.now() + timeoutMs },
      (err, reply) => {
        client.close();
        if (err) resolve({ ok: false, message: `grpc health ${address}: ${err.details || err.message}` });
        else if (reply?.[0] === 0x08 && reply[1] === 1) resolve({ ok: true, message: '' });
        else resolve({ ok: false, message: `grpc health ${address}: not SERVING` });
      },
    );
  });
}

/** How long a timed-out exec check's processes get after SIGTERM before SIGKILL. */
export const EXEC_KILL_GRACE_MS = 1000;
const EXEC_OUTPUT_BYTES = 64 * 1024;

/**
 * The command in a process group of its own, so that on timeout the whole group goes (a shell's
 * children too), SIGTERM then SIGKILL after a grace: a command that ignores SIGTERM cannot keep the
 * check from failing. A timeout is a failure, whatever the command does after it.
 */
function execCheck(command: readonly string[], timeoutMs: number): Promise<CheckResult> {
  const [file = '', ...args] = command;
  const what = `exec ${command.join(' ')}`;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: CheckResult): void => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const child = spawn(file, args, {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: childEnv(),
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < EXEC_OUTPUT_BYTES) stderr += chunk;
    });
    const group = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        // the group is gone
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      settle({ ok: false, message: `${what}: no exit within ${timeoutMs} ms` });
      group('SIGTERM');
      killTimer = setTimeout(() => group('SIGKILL'), EXEC_KILL_GRACE_MS);
      killTimer.unref();
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      settle({ ok: false, message: `${what}: ${err.message}` });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // What the command left behind in its group goes with it.
      if (killTimer === undefined) group('SIGKILL');
      if (code === 0) settle({ ok: true, message: '' });
      else
        settle({
          ok: false,
          message: `${what}: ${stderr.trim().slice(0, 200) || (signal ? `killed by ${signal}` : `exit code ${code ?? '?'}`)}`,
        });
    });
  });
}

export interface ProberOptions {
  readonly probe: ReadinessProbe;
  /** The application's address when the probe names no host (--instance-ip, else 127.0.0.1). */
  readonly host: string;
  /** A new state: after successThreshold passes in a row, or failureThreshold failures. */
  readonly onState: (healthy: boolean, message: string) => void;
}

/** Runs the checks every period after the initial delay, and reports state changes. */
export class Prober {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private state: boolean | undefined;
  /** The last check: when, and how it went. */
  last: (CheckResult & { readonly at: string }) | undefined;

  constructor(private readonly options: ProberOptions) {}

  start(): void {
    const delay = (this.options.probe.initialDelaySeconds ?? 0) * 1000;
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  /** The state decided so far: undefined before a threshold was reached. */
  get healthy(): boolean | undefined {
    return this.state;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const { probe } = this.options;
    const result = await checkOnce(probe, this.options.host);
    if (this.stopped) return;
    this.last = { ...result, at: new Date().toISOString() };
    if (result.ok) {
      this.successes += 1;
      this.failures = 0;
      if (
        this.state !== true &&
        this.successes >= (probe.successThreshold || PROBE_DEFAULTS.successThreshold)
      )
        this.decide(true, '');
    } else {
      this.failures += 1;
      this.successes = 0;
      if (
        this.state !== false &&
        this.failures >= (probe.failureThreshold || PROBE_DEFAULTS.failureThreshold)
      )
        this.decide(false, result.message);
    }
    const period = (probe.periodSeconds || PROBE_DEFAULTS.periodSeconds) * 1000;
    this.timer = setTimeout(() => void this.tick(), period);
  }

  private decide(healthy: boolean, message: string): void {
    this.state = healthy;
    this.options.onState(healthy, message);
  }
}
