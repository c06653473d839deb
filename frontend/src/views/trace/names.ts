/** Event names as lists and tables show them: C++ kernel names carry template arguments that run to
 * hundreds of characters, so each outermost `<…>` is collapsed (the full name stays on hover). */

/** `name` with the text inside each outermost pair of angle brackets replaced by "…"; a name whose
 * brackets do not pair up (`operator<`, `a < b`) is left as it is. */
export function shortName(name: string): string {
  if (!name.includes("<")) return name;
  let depth = 0;
  let out = "";
  for (const ch of name) {
    if (ch === "<") {
      if (depth++ === 0) out += "<…";
    } else if (ch === ">") {
      if (depth === 0) return name;
      if (--depth === 0) out += ">";
    } else if (depth === 0) {
      out += ch;
    }
  }
  return depth === 0 ? out : name;
}
