/** The MCP server's name and version as `initialize` answers them (no imports: read before the rest loads). */
import { readFileSync } from 'node:fs';

/** The server name in the `initialize` answer unless `name` says otherwise. */
export const MCP_SERVER_NAME = 'errand';

/** The package's version (`src/mcp` and `dist/mcp` both sit two levels below the package root). */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}
