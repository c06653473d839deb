/** Types of views.mjs, for vitest.config.ts and for the registry that receives the discovered tools. */

/** What every `src/views/<tool>/tool.json` declares. */
interface ToolDeclaration {
  /** The folder's name; used in deep links (`tool=`), test ids and the view's chunk path. */
  id: string;
  /** The tab's text. */
  title: string;
  // No tab position here: the order is the server's (Python `Tool(order=...)`), given by `/runs`.
}

/** A tool found in its folder: its declaration; the folder's `index.ts` exports the view's `mount`. */
export type DiscoveredTool = ToolDeclaration;

/** `frontend/src/views/`. */
export const VIEWS_DIR: string;

/** The tools declared under `viewsDir`, by id; throws naming the file on a bad declaration. */
export function discoverTools(viewsDir?: string): DiscoveredTool[];

/** esbuild / vitest `define` entries that hand the discovered tools to the registry. */
export function toolsDefine(viewsDir?: string): Record<string, string>;
