// The debug option PORTOLAN_VALIDATE_PUSHES=1: every generated resource is checked against Envoy's
// (validate.rules) before it is sent; an invalid one is logged and withheld (the proxy keeps what it
// has rather than NACKing). Costs a decode per generated resource, so it is off by default.
import { createLogger, type Logger } from '../../log/logger.js';
import { withBuild, type ResourceGenerator } from '../generators/generator.js';
import { TYPE_URL_PREFIX } from '../proto/type-urls.js';
import { validateEncoded } from './pgv-validator.js';

export const VALIDATE_PUSHES_ENV = 'PORTOLAN_VALIDATE_PUSHES';

export function validatePushesEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[VALIDATE_PUSHES_ENV] === '1' || env[VALIDATE_PUSHES_ENV] === 'true';
}

let defaultLogger: Logger | undefined;

/** `inner` with its builds checked; every other member is inner's (withBuild). */
export function validatingGenerator(inner: ResourceGenerator, logger?: Logger): ResourceGenerator {
  return withBuild(inner, (ctx, name) => {
    const built = inner.build(ctx, name);
    if (!built) return built;
    const violations = validateEncoded(built.typeUrl.slice(TYPE_URL_PREFIX.length), built.value);
    if (violations.length === 0) return built;
    const log = logger ?? (defaultLogger ??= createLogger('warn').child({ component: 'validate-pushes' }));
    log.error(
      {
        type: inner.typeUrl,
        name,
        node: ctx.proxy.id,
        proxy: ctx.proxy.id,
        violations: violations.slice(0, 20),
      },
      'generated resource fails Envoy validation rules: not sent',
    );
    return undefined;
  });
}
