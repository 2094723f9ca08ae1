// Generate once, send many: resources built for one serving generation, shared by every stream whose
// proxy has the same view (generator.viewKey). A new generation (a catalog or config change) starts empty.
import type { GenerateContext, ResourceGenerator } from './generator.js';
import type { EncodedResource } from './resource.js';

export class ResourceCache {
  private generation = -1;
  private entries = new Map<string, EncodedResource | null>();
  hits = 0;
  misses = 0;

  get(
    generation: number,
    generator: ResourceGenerator,
    ctx: GenerateContext,
    name: string,
  ): EncodedResource | undefined {
    if (generation !== this.generation) {
      this.generation = generation;
      this.entries = new Map();
    }
    const key = `${generator.proxyKind}\0${generator.typeUrl}\0${generator.viewKey(ctx.proxy)}\0${name}`;
    const cached = this.entries.get(key);
    if (cached !== undefined) {
      this.hits += 1;
      return cached ?? undefined;
    }
    this.misses += 1;
    const built = generator.build(ctx, name);
    this.entries.set(key, built ?? null);
    return built;
  }
}
