// GET and watch requests to one API server, authenticated by @kubernetes/client-node's KubeConfig.
//
// Why not the library's ListWatch/makeInformer or its Watch class (1.4): ListWatch cannot ask for
// bookmarks (it fixes the watch query to `resourceVersion`), does not retry after an error (it
// reports it and stops), and never says when its first list is complete; Watch cannot be aborted
// until the response headers arrive (it hands out its AbortController only then), so an API server
// that accepts a connection and never answers hangs it for good, and it has no request timeout.
// So this file does the HTTP itself and takes from the library what is hard to get right:
// kubeconfig loading (contexts, in-cluster service account), credentials (client certificates,
// tokens, exec and auth-provider plugins, refreshed per request) and TLS and proxy settings, all
// through `KubeConfig.applyToHTTPSOptions`.
import * as http from 'node:http';
import * as https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** A non-2xx answer, or an ERROR watch event, with the API server's Status `code` and `reason`. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** An open watch's connection was cut (server restart, a proxy's idle timeout, network). */
export class ConnectionLost extends Error {}

/** `410 Gone`: the resourceVersion (or continue token) is older than the server still has. */
export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 410;
}

export type WatchEventHandler = (type: string, object: unknown) => void;

export interface WatchRequest {
  readonly signal: AbortSignal;
  /** Bound on the wait for the response headers. */
  readonly headerTimeoutMs: number;
  /** Called once the server accepted the watch (200 and headers received). */
  readonly onOpen: () => void;
  /** Called per event; throwing ends the watch with that error. */
  readonly onEvent: WatchEventHandler;
}

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

export class KubeHttp {
  constructor(private readonly config: KubeConfig) {}

  /** The API server's URL (the current context's cluster). */
  get server(): string {
    return this.config.getCurrentCluster()?.server ?? '';
  }

  /** A GET answered with JSON; rejects with KubeApiError on a non-2xx status. */
  async getJson(path: string, query: Query, timeoutMs: number, signal: AbortSignal): Promise<unknown> {
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    const res = await this.open(path, query, bounded);
    const body = await whileNotAborted(bounded, res, readBody(res));
    try {
      return JSON.parse(body) as unknown;
    } catch {
      throw new Error(`GET ${path}: the API server answered with invalid JSON`);
    }
  }

  /**
   * A watch: newline-delimited JSON events on one chunked response. Resolves when the server ends
   * the stream; rejects on a network error, an abort, or an error thrown by `onEvent`.
   */
  async watch(path: string, query: Query, req: WatchRequest): Promise<void> {
    // The header timeout bounds the wait for an answer only; from then on only the caller's signal
    // (stop, or the caller's own watchdog) ends the stream.
    const headerTimeout = AbortSignal.timeout(req.headerTimeoutMs);
    const res = await this.open(
      path,
      { ...query, watch: true },
      AbortSignal.any([req.signal, headerTimeout]),
    );
    req.onOpen();
    try {
      await whileNotAborted(
        req.signal,
        res,
        readLines(res, (line) => {
          const event = parseEvent(line, path);
          req.onEvent(event.type, event.object);
        }),
      );
    } catch (err) {
      // Node reports a cut connection as a bare "aborted" or a socket error code; say what it was.
      const cut =
        err instanceof Error &&
        !(err instanceof KubeApiError) &&
        (err.message === 'aborted' || 'code' in err);
      if (req.signal.aborted || !cut) throw err;
      throw new ConnectionLost(`watch ${path}: connection lost (${err.message})`);
    }
  }

  private async open(path: string, query: Query, signal: AbortSignal): Promise<http.IncomingMessage> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const options: https.RequestOptions = {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'portolan' },
    };
    await this.config.applyToHTTPSOptions(options);
    const request = url.protocol === 'https:' ? https.request : http.request;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      // Not http.request's own `signal` option: that would also cut the response after the headers.
      const req = request(url, options, (response) => {
        signal.removeEventListener('abort', onAbort);
        resolve(response);
      });
      const onAbort = (): void => {
        req.destroy(abortError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
      req.once('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      });
      req.end();
    });
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return res;
    const body = await whileNotAborted(signal, res, readBody(res)).catch(() => '');
    throw statusError(status, body, `GET ${url.pathname}`);
  }
}

/** The API server's Status object (kind: Status) as a KubeApiError. */
export function statusError(httpStatus: number, body: unknown, what: string): KubeApiError {
  let status: Record<string, unknown> = {};
  try {
    const parsed = typeof body === 'string' ? (JSON.parse(body) as unknown) : body;
    if (typeof parsed === 'object' && parsed !== null) status = parsed as Record<string, unknown>;
  } catch {
    // not a Status: keep the HTTP status alone
  }
  const code = typeof status.code === 'number' ? status.code : httpStatus;
  const reason = typeof status.reason === 'string' ? status.reason : (http.STATUS_CODES[code] ?? '');
  const message = typeof status.message === 'string' ? status.message : reason;
  return new KubeApiError(code, reason, `${what}: ${code} ${message}`);
}

function parseEvent(line: string, path: string): { type: string; object: unknown } {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch {
    throw new Error(`watch ${path}: a line of the stream is not JSON`);
  }
  if (typeof event !== 'object' || event === null || typeof (event as { type?: unknown }).type !== 'string')
    throw new Error(`watch ${path}: an event without a type`);
  const { type, object } = event as { type: string; object?: unknown };
  return { type, object };
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') return new Error('request timed out');
  return reason instanceof Error ? reason : new Error('aborted');
}

/** Settles with `work`, destroying `res` (so that `work` fails) if `signal` aborts first. */
async function whileNotAborted<T>(
  signal: AbortSignal,
  res: http.IncomingMessage,
  work: Promise<T>,
): Promise<T> {
  const onAbort = (): void => {
    res.destroy(abortError(signal));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  try {
    return await work;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function readBody(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (body += chunk));
    res.once('end', () => resolve(body));
    res.once('error', reject);
    res.once('close', () => {
      if (!res.complete) reject(new Error('the API server closed the connection mid-response'));
    });
  });
}

/** Calls `onLine` per newline-terminated line; resolves at the end of the stream. */
function readLines(res: http.IncomingMessage, onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      res.destroy();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let nl;
      while (!failed && (nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line === '') continue;
        try {
          onLine(line);
        } catch (err) {
          fail(err);
        }
      }
    });
    res.once('end', () => {
      if (!failed) resolve();
    });
    res.once('error', fail);
    res.once('close', () => {
      if (!res.complete) fail(new Error('the watch connection was cut'));
    });
  });
}
