// The agent's own ADS stream to the control plane, beside the streams it proxies for local clients:
// what the agent itself subscribes to (its WorkloadGroup's probe, the DNS name table) and the health
// reports it sends (Istio's `istio.io/health` requests). Its node carries the agent's identity and,
// with `--group`, AUTO_REGISTER_GROUP and INSTANCE_IPS: the control plane registers the VM while
// this stream is open. Kept open across outages by the upstream link (replaying subscriptions and
// the last report); a refusal (the group does not exist, the identity does not fit it) is kept as
// the reason and retried slowly, since the config may change.
import { status as GrpcStatus, type StatusObject } from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import { messageType } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { HEALTH_INFO } from '../../xds/proto/type-urls.js';
import type { UpstreamConnection } from '../upstream/connection.js';
import { UpstreamLink } from '../upstream/link.js';
import { UPSTREAM_PATH } from '../xds/local-stream.js';
import { encodeSotwRequest, readSotwResponse, type NodeObject } from '../xds/messages.js';

export interface ControlNode {
  readonly id: string;
  readonly metadata: Readonly<Record<string, string>>;
}

interface Subscription {
  readonly names: readonly string[];
  readonly onResources: (resources: readonly EncodedResource[]) => void;
  version: string;
  nonce: string;
}

/** How long a refused stream waits before asking again (the group may appear). */
const REFUSED_RETRY_MS = 10_000;

export class ControlStream {
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly link: UpstreamLink;
  private readonly node: NodeObject;
  private health: { healthy: boolean; message: string } | undefined;
  /** Whether the node went out on the current upstream stream (only its first request carries it). */
  private nodeSent = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private refusedWith: string | undefined;
  private opened = false;

  constructor(
    connection: UpstreamConnection,
    node: ControlNode,
    private readonly logger: Logger,
  ) {
    this.node = nodeObject(node);
    this.link = new UpstreamLink(connection, UPSTREAM_PATH.sotw, {
      replay: () => this.replay(),
      message: (bytes) => this.fromUpstream(bytes),
      refused: (s) => this.refused(s),
      lost: () => undefined,
    });
  }

  /** Why the control plane refused the stream, until it accepts it again. */
  get refusal(): string | undefined {
    return this.refusedWith;
  }

  isOpen(): boolean {
    return this.link.isOpen();
  }

  /** Asks for `names` of `typeUrl`; `onResources` gets every response's resources. */
  subscribe(
    typeUrl: string,
    names: readonly string[],
    onResources: (resources: readonly EncodedResource[]) => void,
  ): void {
    this.subscriptions.set(typeUrl, { names, onResources, version: '', nonce: '' });
    this.send(this.request(typeUrl));
  }

  /** Reports the workload's readiness; sent again after a reconnect. */
  reportHealth(healthy: boolean, message: string): void {
    this.health = { healthy, message };
    this.send(this.healthRequest());
  }

  /** Opens the stream (once something is subscribed, so its first request has a node). */
  open(): void {
    this.opened = true;
    this.link.open();
  }

  close(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.link.close();
  }

  private send(bytes: Buffer | undefined): void {
    if (!bytes || !this.opened || !this.link.isOpen()) return; // the replay at the next open covers it
    this.link.send(bytes);
  }

  private replay(): Buffer[] {
    this.nodeSent = false;
    for (const s of this.subscriptions.values()) s.nonce = '';
    const out = [...this.subscriptions.keys()].map((t) => this.request(t));
    if (this.health) out.push(this.healthRequest());
    return out.filter((b): b is Buffer => b !== undefined);
  }

  private withNode(): { node?: NodeObject } {
    if (this.nodeSent) return {};
    this.nodeSent = true;
    return { node: this.node };
  }

  private request(typeUrl: string): Buffer | undefined {
    const s = this.subscriptions.get(typeUrl);
    if (!s) return undefined;
    return encodeSotwRequest({
      ...this.withNode(),
      typeUrl,
      names: s.names,
      versionInfo: s.version,
      nonce: s.nonce,
    });
  }

  private healthRequest(): Buffer | undefined {
    const h = this.health;
    if (!h) return undefined;
    return encodeSotwRequest({
      ...this.withNode(),
      typeUrl: HEALTH_INFO,
      names: [],
      versionInfo: '',
      nonce: '',
      ...(!h.healthy && {
        errorDetail: { code: GrpcStatus.UNAVAILABLE, message: h.message || 'unhealthy' },
      }),
    });
  }

  private fromUpstream(bytes: Buffer): void {
    if (this.refusedWith) {
      this.logger.info('the control plane accepts the agent stream again');
      this.refusedWith = undefined;
    }
    const res = readSotwResponse(bytes);
    const s = this.subscriptions.get(res.typeUrl);
    if (!s) return;
    s.version = res.versionInfo;
    s.nonce = res.nonce;
    // ACK first: what the agent does with it cannot be rejected by the control plane's rules.
    this.send(this.request(res.typeUrl));
    try {
      s.onResources(res.resources);
    } catch (err) {
      this.logger.error({ err, type: res.typeUrl }, 'agent: applying a control plane resource failed');
    }
  }

  private refused(s: StatusObject): void {
    this.refusedWith = s.details;
    this.logger.warn(
      { code: s.code, reason: s.details, retryInMs: REFUSED_RETRY_MS },
      'the control plane refused the agent stream',
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.link.open();
    }, REFUSED_RETRY_MS);
    this.retryTimer.unref();
  }
}

/** The node in protobufjs object form, metadata as a Struct of strings. */
function nodeObject(node: ControlNode): NodeObject {
  const key = 'string_value' in messageType('google.protobuf.Value').fields ? 'string_value' : 'stringValue';
  return {
    id: node.id,
    cluster: 'portolan-agent',
    user_agent_name: 'portolan-agent',
    metadata: {
      fields: Object.fromEntries(Object.entries(node.metadata).map(([k, v]) => [k, { [key]: v }])),
    },
  };
}
