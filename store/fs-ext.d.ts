// The one function of fs-ext that store/data-dir-lock.ts uses (the package ships no types).
declare module 'fs-ext' {
  /** flock(2) on an open file: 'exnb' an exclusive lock without waiting (throws EAGAIN when held), 'un' releases it. */
  export function flockSync(fd: number, flags: 'sh' | 'ex' | 'shnb' | 'exnb' | 'un'): void;
}
