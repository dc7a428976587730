// The lint of @n8n/node-cli (successor of n8n-node-dev's tooling), without-cloud-support config:
// this package has runtime dependencies (pg, zod), so it is an unverified community package with
// `"strict": false` in package.json's n8n field.
import { configWithoutCloudSupport } from '@n8n/node-cli/eslint';

export default [
	...configWithoutCloudSupport,
	{
		ignores: ['dist/**', 'node_modules/**', 'test/**', 'bench/**', 'scripts/**', 'gulpfile.js', 'eslint.config.mjs'],
	},
];
