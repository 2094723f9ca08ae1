// Which devices hold a local filesystem: one whose reads finish or fail on their own, never waiting
// on a remote peer. A config file on one can be read synchronously (read-file.ts), which costs a
// few system calls on the event loop instead of four round trips through libuv's thread pool.
// Anything not known to be local (NFS, SMB, FUSE, 9p, Ceph, a btrfs subvolume's anonymous device,
// any system without /proc/self/mountinfo) keeps the asynchronous read with its deadline.
//
// The device's filesystem type comes from /proc/self/mountinfo (major:minor → type), which the
// kernel answers from memory: asking never touches the filesystem in question, so it cannot hang.
import { readFileSync } from 'node:fs';

const LOCAL_TYPES: ReadonlySet<string> = new Set([
  'ext2',
  'ext3',
  'ext4',
  'xfs',
  'btrfs',
  'tmpfs', // a Kubernetes ConfigMap or Secret volume; /tmp on many systems
  'ramfs',
  'overlay', // a container's root
  'zfs',
  'f2fs',
]);

/** More devices than any real config directory spans; past it, new ones count as not local. */
const MAX_DEVICES = 64;

export class LocalFilesystems {
  /** Device number → whether it is local. */
  private readonly devices = new Map<number, boolean>();

  constructor(private readonly mountinfo: () => string = readMountinfo) {}

  /** Whether `dev` (a Stats.dev) is a local filesystem. Reads the mount table once per new device. */
  isLocal(dev: number): boolean {
    const known = this.devices.get(dev);
    if (known !== undefined) return known;
    if (this.devices.size >= MAX_DEVICES) return false;
    const local = LOCAL_TYPES.has(fsTypeOf(dev, this.mountinfo()) ?? '');
    this.devices.set(dev, local);
    return local;
  }
}

function readMountinfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/**
 * The filesystem type mounted on device `dev`, from mountinfo lines such as
 * `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`.
 */
export function fsTypeOf(dev: number, mountinfo: string): string | undefined {
  const id = `${major(dev)}:${minor(dev)}`;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields[2] !== id) continue;
    const separator = fields.indexOf('-', 6);
    if (separator > 0) return fields[separator + 1];
  }
  return undefined;
}

// glibc's gnu_dev_major / gnu_dev_minor on a Stats.dev number (exact below 2^53; bitwise operators
// take the low 32 bits of their operand, hence the divisions).
export function major(dev: number): number {
  return ((Math.floor(dev / 2 ** 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff)) >>> 0;
}

export function minor(dev: number): number {
  return ((dev & 0xff) | (Math.floor(dev / 2 ** 12) & ~0xff)) >>> 0;
}
