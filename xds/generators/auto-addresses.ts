// The auto-allocated service addresses of a serving view (mesh/auto-addresses.ts), computed once per
// view: the name table and Envoy's captured listeners read the same allocation.
import { allocateAddresses, type AllocatedAddress } from '../../mesh/auto-addresses.js';
import type { GenerateContext } from './generator.js';
import { memoSlot } from './view-memo.js';

const ALLOCATION = memoSlot<Map<string, AllocatedAddress>>('auto-allocated addresses');

export function autoAddresses(ctx: GenerateContext): Map<string, AllocatedAddress> {
  return ctx.memo.get(ALLOCATION, '', ctx, (ctx) => allocateAddresses(ctx.catalog.services()));
}
