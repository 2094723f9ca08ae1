// The admin API as the dashboard reads it: GET JSON from this server (same origin). The shapes of the
// views are the server's own, imported as types from model/admin-api.ts: one definition, which the
// admin views build and the pages read.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' }, cache: 'no-store' });
  const body = (await res.json().catch(() => null)) as unknown;
  if (!res.ok) {
    const message = (body as { error?: unknown } | null)?.error;
    throw new ApiError(res.status, typeof message === 'string' ? message : `${path}: HTTP ${res.status}`);
  }
  return body as T;
}
