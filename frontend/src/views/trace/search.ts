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

/** What the search box asks the server: `text` matched in names and argument values (or with `regex`
 * a regular expression over names), narrowed by `arg`, whitespace-separated `key:value` filters. */
export interface SearchQuery {
  text: string;
  regex: boolean;
  arg: string;
}

/** A `key:value` word: a key (no colon) and a value that does not start with one, so `aten::mm`
 * stays text. */
const ARG_FILTER = /^[A-Za-z_][\w.-]*:[^:\s]\S*$/;

/** Splits the box's text into its query: `key:value` words are argument filters (`stream:7`,
 * `grid:*1024*`), the rest is the text; double quotes keep a word as text (`"nccl:all_reduce"`). */
export function parseQuery(box: string, regex: boolean): SearchQuery {
  const text: string[] = [];
  const arg: string[] = [];
  for (const [, quoted, word] of box.trim().matchAll(/"([^"]*)"|(\S+)/g)) {
    if (word !== undefined && ARG_FILTER.test(word)) arg.push(word);
    else text.push(quoted ?? word);
  }
  return { text: text.join(" "), regex, arg: arg.join(" ") };
}

/** The query taken literally: a name from another tab, which may hold a colon. */
export function literalQuery(text: string): SearchQuery {
  return { text: text.trim(), regex: false, arg: "" };
}

export function isEmptyQuery(q: SearchQuery): boolean {
  return !q.text && !q.arg;
}

export function sameQuery(a: SearchQuery, b: SearchQuery): boolean {
  return a.text === b.text && a.regex === b.regex && a.arg === b.arg;
}

/** A regular expression matching exactly `name` (for the server's `regex=1`). */
export function exactNamePattern(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
}
