// The registering side in tests: a plain node-zookeeper-client session that writes Curator instances
// and Dubbo providers the way Spring Cloud and Dubbo do (ephemeral instances under persistent parents).
import zookeeper from 'node-zookeeper-client';

export type NodeMode = 'persistent' | 'ephemeral';

const OPEN_ACL = [new zookeeper.ACL(zookeeper.Permission.ALL, new zookeeper.Id('world', 'anyone'))];

export class ZkTestClient {
  private constructor(private readonly client: zookeeper.Client) {}

  /** Connects a new session (bounded wait). */
  static async connect(connectString: string, sessionTimeoutMs = 4000): Promise<ZkTestClient> {
    const client = zookeeper.createClient(connectString, {
      sessionTimeout: sessionTimeoutMs,
      spinDelay: 100,
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.close();
        reject(new Error(`no ZooKeeper session with ${connectString} within 10 s`));
      }, 10_000);
      client.once('connected', () => {
        clearTimeout(timer);
        resolve();
      });
      client.connect();
    });
    return new ZkTestClient(client);
  }

  /**
   * Creates `path` (and its missing parents, persistent) with `data`, and `acls` if given (default:
   * open to anyone); replaces the data if it exists.
   */
  async put(
    path: string,
    data: string | undefined,
    mode: NodeMode = 'persistent',
    acls: zookeeper.ACL[] = OPEN_ACL,
  ): Promise<void> {
    const parent = path.slice(0, path.lastIndexOf('/'));
    if (parent) await this.call<string>((cb) => this.client.mkdirp(parent, cb));
    const bytes = Buffer.from(data ?? '', 'utf8');
    const createMode =
      mode === 'ephemeral' ? zookeeper.CreateMode.EPHEMERAL : zookeeper.CreateMode.PERSISTENT;
    try {
      await this.call<string>((cb) => this.client.create(path, bytes, acls, createMode, cb));
    } catch (err) {
      if (!(err instanceof zookeeper.Exception) || err.getCode() !== zookeeper.Exception.NODE_EXISTS)
        throw err;
      await this.call((cb) => this.client.setData(path, bytes, cb));
    }
  }

  /** Replaces the data of an existing node (one round trip). */
  async set(path: string, data: string): Promise<void> {
    await this.call((cb) => this.client.setData(path, Buffer.from(data, 'utf8'), cb));
  }

  async setAcl(path: string, acls: zookeeper.ACL[]): Promise<void> {
    await this.call((cb) => this.client.setACL(path, acls, cb));
  }

  async remove(path: string): Promise<void> {
    await this.call<void>((cb) => this.client.remove(path, (err) => cb(err, undefined)));
  }

  /** The names of the children of `path`. */
  async children(path: string): Promise<string[]> {
    return this.call<string[]>((cb) => this.client.getChildren(path, cb));
  }

  /** Removes `path` and everything below it; nothing if it does not exist. */
  async removeTree(path: string): Promise<void> {
    let children: string[];
    try {
      children = await this.call<string[]>((cb) => this.client.getChildren(path, cb));
    } catch (err) {
      if (err instanceof zookeeper.Exception && err.getCode() === zookeeper.Exception.NO_NODE) return;
      throw err;
    }
    for (const child of children) await this.removeTree(`${path}/${child}`);
    await this.remove(path);
  }

  /** Closes the session: ZooKeeper deletes its ephemeral nodes at once. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5000);
      this.client.once('disconnected', () => {
        clearTimeout(timer);
        resolve();
      });
      this.client.close();
    });
  }

  private call<T>(fn: (cb: (err: Error | zookeeper.Exception | null, value: T) => void) => void): Promise<T> {
    // zookeeper.Exception inherits from Error at run time (its typings do not say so): passed as is.
    return new Promise((resolve, reject) =>
      fn((err, value) =>
        err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(value),
      ),
    );
  }
}

export interface CuratorInstanceSpec {
  readonly name: string;
  readonly id: string;
  readonly address: string;
  readonly port?: number | null;
  readonly sslPort?: number | null;
  readonly enabled?: boolean;
  readonly metadata?: Record<string, string>;
}

/** Curator's JSON ServiceInstance with a Spring Cloud Zookeeper payload, as Curator serializes it. */
export function curatorInstanceJson(spec: CuratorInstanceSpec): string {
  return JSON.stringify({
    name: spec.name,
    id: spec.id,
    address: spec.address,
    port: spec.port ?? null,
    sslPort: spec.sslPort ?? null,
    payload: {
      '@class': 'org.springframework.cloud.zookeeper.discovery.ZookeeperInstance',
      id: spec.name,
      name: spec.name,
      metadata: { instance_status: 'UP', ...spec.metadata },
    },
    registrationTimeUTC: 1_700_000_000_000,
    serviceType: 'DYNAMIC',
    uriSpec: { parts: [{ value: 'scheme', variable: true }] },
    enabled: spec.enabled ?? true,
  });
}

/** A Dubbo provider's node name: its URL, encoded like Java's URLEncoder. */
export function dubboProviderNode(url: string): string {
  return encodeURIComponent(url).replace(/%20/g, '+');
}
