// Join tokens: `ID.SECRET.IDENTITY` (base64url identity), bound to one SPIFFE identity, an expiry and a number of uses. The store
// keeps only sha256(token); revocation is a row update, so it takes effect at the next request.
import { createHash, randomBytes } from 'node:crypto';
import type { JoinTokenTable } from '../store/join-tokens.js';
import type { CaStore } from './ca-store.js';

export interface CreatedToken {
  readonly id: string;
  readonly token: string;
  readonly expiresAt: Date;
}

export class TokenError extends Error {}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createJoinToken(
  table: JoinTokenTable,
  identity: string,
  ttlMs: number,
  uses = 1,
  now = new Date(),
): CreatedToken {
  const { created, row } = newToken(identity, ttlMs, uses, now);
  if (!table.insert(row)) throw new TokenError('could not store the token (see the log)');
  return created;
}

/** createJoinToken on the shared store (several replicas: PostgreSQL). */
export async function createSharedJoinToken(
  store: Pick<CaStore, 'insertJoinToken'>,
  identity: string,
  ttlMs: number,
  uses = 1,
  now = new Date(),
): Promise<CreatedToken> {
  const { created, row } = newToken(identity, ttlMs, uses, now);
  await store.insertJoinToken(row);
  return created;
}

function newToken(
  identity: string,
  ttlMs: number,
  uses: number,
  now: Date,
): {
  created: CreatedToken;
  row: { id: string; hash: string; identity: string; expiresAt: string; uses: number };
} {
  if (ttlMs <= 0) throw new TokenError('the token TTL must be positive');
  if (!Number.isInteger(uses) || uses < 1) throw new TokenError('uses must be a positive integer');
  const id = randomBytes(6).toString('hex');
  // The identity rides along in the clear (it is not a secret) so the workload knows what to ask for.
  const token = `${id}.${randomBytes(32).toString('base64url')}.${Buffer.from(identity).toString('base64url')}`;
  const expiresAt = new Date(now.getTime() + ttlMs);
  return {
    created: { id, token, expiresAt },
    row: { id, hash: hashToken(token), identity, expiresAt: expiresAt.toISOString(), uses },
  };
}

/** The token's id (the part before the dot), so `revoke` accepts either the id or the whole token. */
export function tokenId(tokenOrId: string): string {
  return tokenOrId.split('.')[0] ?? tokenOrId;
}

/** Spends one use; returns the identity, or throws TokenError saying why the token is refused. */
export async function redeemJoinToken(
  store: Pick<CaStore, 'consumeJoinToken' | 'findJoinToken'>,
  token: string,
  now = new Date(),
): Promise<string> {
  const hash = hashToken(token);
  // One atomic statement on the store: a single-use token raced on two replicas is spent once.
  const identity = await store.consumeJoinToken(hash, now);
  if (identity) return identity;
  const row = await store.findJoinToken(hash);
  if (!row) throw new TokenError('unknown join token');
  if (row.revokedAt) throw new TokenError(`join token ${row.id} was revoked`);
  if (new Date(row.expiresAt) <= now)
    throw new TokenError(`join token ${row.id} expired at ${row.expiresAt}`);
  if (row.usesLeft <= 0) throw new TokenError(`join token ${row.id} has been used up`);
  throw new TokenError(`join token ${row.id} could not be used (store error)`);
}

/** The SPIFFE URI a token was created for (its last part), without asking the CA. */
export function tokenIdentity(token: string): string {
  const part = token.split('.')[2];
  if (!part) throw new TokenError('malformed join token: expected ID.SECRET.IDENTITY');
  return Buffer.from(part, 'base64url').toString('utf8');
}

export type JoinTokenState = 'live' | 'used up' | 'expired' | 'revoked';

/** What a stored token is now: revoked wins, then expired, then used up (no uses left), else live. */
export function joinTokenState(
  row: { readonly revokedAt: string | null; readonly expiresAt: string; readonly usesLeft: number },
  now = new Date(),
): JoinTokenState {
  if (row.revokedAt) return 'revoked';
  if (new Date(row.expiresAt) <= now) return 'expired';
  if (row.usesLeft <= 0) return 'used up';
  return 'live';
}
