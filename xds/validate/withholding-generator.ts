// Pushes that clients will not reject: a build the proxy's client would NACK or crash on
// (acceptance.ts, by the client capability table) is not served. The generator answers with the
// last good build of that resource for that share instead, so the cache sees no change and the
// client is sent nothing new: in SotW it keeps being sent the last good version (an LDS or CDS
// resource left out of a response would mean "delete"), in delta nothing is sent. With no last good
// build (the first one) the resource is absent for that share. What was withheld is recorded
// (withheld.ts) and logged once per new version.
//
// The new version is still built, through the caller's context, so its reads are recorded: the
// change that fixes the config rebuilds it and, accepted, it is served. Last good builds are held
// weakly, one per (view key, name): the resource cache holds the object it was given, and once the
// cache drops it (the name is no longer built or subscribed, the share idles out) so does this.
import { createLogger, type Logger } from '../../log/logger.js';
import type { GenerateContext, ResourceGenerator, ServingView } from '../generators/generator.js';
import type { EncodedResource } from '../proto/resource.js';
import { shortTypeName } from '../proto/type-urls.js';
import { clientProfile } from '../proxy/client-capabilities.js';
import type { Proxy } from '../proxy/proxy.js';
import { findRejection } from './acceptance.js';
import type { WithheldPushes } from './withheld.js';

let defaultLogger: Logger | undefined;

/** `inner` with builds its proxy's client would reject withheld; every other member is inner's. */
export function withholdingGenerator(
  inner: ResourceGenerator,
  withheld: WithheldPushes,
  logger?: Logger,
): ResourceGenerator {
  const { typeUrl, proxyKind: kind } = inner;
  const lastGood = new Map<string, WeakRef<EncodedResource>>();
  const forget = new FinalizationRegistry<string>((key) => {
    if (lastGood.get(key)?.deref() === undefined) lastGood.delete(key);
  });
  // Clients checked by different versioned rules must not share builds: their key says which.
  const viewKey = (proxy: Proxy, view?: ServingView): string => {
    const base = inner.viewKey(proxy, view);
    const extra = clientProfile(proxy).checkKey(typeUrl);
    return extra ? `${base}\0${extra}` : base;
  };
  const build = (ctx: GenerateContext, name: string): EncodedResource | undefined => {
    const built = inner.build(ctx, name);
    if (clientProfile(ctx.proxy).checks(typeUrl).length === 0) return built;
    // The cache passes the view only to a generator whose key reads it (generator.ts viewKeyReads).
    const share = viewKey(ctx.proxy, inner.viewKeyReads ? ctx : undefined);
    const key = `${share}\0${name}`;
    if (!built) {
      lastGood.delete(key);
      withheld.clear(kind, typeUrl, share, name);
      return undefined;
    }
    const previous = lastGood.get(key)?.deref();
    const rejection = findRejection(ctx.proxy, typeUrl, built);
    if (!rejection) {
      withheld.clear(kind, typeUrl, share, name);
      // The object the cache already holds, when the bytes are the same (it keeps its own then).
      if (previous?.version === built.version) return previous;
      lastGood.set(key, new WeakRef(built));
      forget.register(built, key);
      return built;
    }
    const news = withheld.record({
      kind,
      typeUrl,
      viewKey: share,
      name,
      userAgent: ctx.proxy.userAgent,
      userAgentVersion: ctx.proxy.userAgentVersion,
      rule: rejection.rule.id,
      reason: rejection.message,
      version: built.version,
      lastGood: previous !== undefined,
    });
    if (news)
      (logger ?? (defaultLogger ??= createLogger('warn').child({ component: 'client-acceptance' }))).warn(
        {
          type: shortTypeName(typeUrl),
          name,
          node: ctx.proxy.id,
          rule: rejection.rule.id,
          detail: rejection.detail,
          kept: previous?.version ?? null,
        },
        previous
          ? 'resource withheld: the client would reject it; it keeps its last good version'
          : 'resource withheld: the client would reject it; it has no last good version, so it is not sent',
      );
    return previous;
  };
  const wrapped = Object.create(inner) as ResourceGenerator;
  Object.defineProperty(wrapped, 'viewKey', { value: viewKey });
  Object.defineProperty(wrapped, 'build', { value: build });
  return wrapped;
}
