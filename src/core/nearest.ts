// Suggestions for a misspelt name: a flag on the command line, an option key, a budget's index.

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/**
 * The known name the user most likely meant: within two edits, or the start of what was typed (or
 * starting with it: an abbreviation).
 */
export function nearest(typed: string, known: readonly string[]): string | undefined {
  const prefixes = (name: string) => typed.length > 0 && (name.startsWith(typed) || typed.startsWith(name))
  return known
    .map((name) => ({ name, distance: editDistance(name.toLowerCase(), typed.toLowerCase()) }))
    .filter(({ name, distance }) => distance <= 2 || prefixes(name))
    .sort((a, b) => a.distance - b.distance)[0]?.name
}
