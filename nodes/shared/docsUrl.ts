/**
 * Where the package's documentation lives: docs/ of the repository on GitHub (package.json `repository`).
 * The one base URL of every documentation link n8n shows in the editor: the credentials' `documentationUrl`
 * (docsUrl('credentials.md#…')) and the codex files' (nodes/<Node>/<Node>.node.json, JSON: the full URL,
 * checked against this base by test/unit/docsLinks.test.ts, which also resolves every link to a file and a
 * heading of this repository).
 */
export const DOCS_BASE_URL = 'https://github.com/n8n-nodes-contracts/n8n-nodes-contracts/blob/main/docs/';

/** `page` (a path under docs/, optionally with a `#heading` anchor) as a full URL. */
export function docsUrl(page: string): string {
	return `${DOCS_BASE_URL}${page}`;
}
