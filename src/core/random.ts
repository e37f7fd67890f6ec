/** A seed of its own for one call: what makes keys fresh when the caller gives none. */
export const freshSeed = (): number => Math.floor(Math.random() * 2 ** 31)

/** mulberry32: a small seeded generator, the same sequence for the same seed on every platform. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
