/** Walking through search matches. The server answers matches in time order one page at a time, so
 * next / previous can visit every match of a trace however many there are: the position is a global
 * index into all matches, and the page holding it is fetched when the step leaves the page held. */

/** The match after (dir 1) or before (dir -1) `index`, wrapping around; index -1 means "none yet". */
export function stepIndex(index: number, dir: 1 | -1, total: number): number {
  if (total <= 0) return -1;
  if (index < 0) return dir === 1 ? 0 : total - 1;
  return (index + dir + total) % total;
}

/** The offset of the page of `limit` matches that holds match `index`. */
export function pageOffset(index: number, limit: number): number {
  return Math.floor(index / limit) * limit;
}

/** Whether match `index` is in the page that starts at `offset` and holds `held` matches. */
export function inPage(index: number, offset: number, held: number): boolean {
  return index >= offset && index < offset + held;
}
