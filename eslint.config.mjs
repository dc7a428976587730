// The lint of @n8n/node-cli (successor of n8n-node-dev's tooling), without-cloud-support config:
// this package has runtime dependencies (pg, zod), so it is an unverified community package with
// `"strict": false` in package.json's n8n field.
import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

export default [
	...configWithoutCloudSupport,
	{
		files: ['credentials/**/*.ts'],
		rules: {
			// Every credential sets `documentationUrl = docsUrl('credentials.md#…')` (nodes/shared/docsUrl.ts, the one
			// base URL of the docs links); the rule only recognises a string literal. test/unit/docsLinks.test.ts
			// checks that each credential has a documentationUrl and that it resolves to a heading of docs/.
			'n8n-nodes-base/cred-class-field-documentation-url-missing': 'off',
		},
	},
	{
		ignores: ['dist/**', 'node_modules/**', 'test/**', 'bench/**', 'scripts/**', 'gulpfile.js', 'eslint.config.mjs'],
	},
];
