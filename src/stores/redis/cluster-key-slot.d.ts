/** The part of cluster-key-slot (the slot function ioredis routes with) the stores use; it ships no types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key (CRC16 of its hash tag, modulo 16384). */
  export default function calculateSlot(key: string): number;
}
