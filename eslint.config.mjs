// The lint of n8n's community-node tooling as of November 2026: the config of @n8n/node-cli 0.48.3
// (`configWithoutCloudSupport`), built here with @n8n/eslint-plugin-community-nodes 0.32.0 pinned in
// devDependencies (issue 27). The @n8n/node-cli in devDependencies stays 0.19.0: 0.48.3 would add an AI SDK
// with LangChain to the install for nothing the lint needs; its config is reproduced rule for rule below.
// Without-cloud-support: the package has runtime dependencies, so it is an unverified community package for
// self-hosted n8n (`"strict": false` in package.json's n8n field), not eligible for n8n Cloud.
import js from '@eslint/js';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import { globalIgnores } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import n8nNodesBase from 'eslint-plugin-n8n-nodes-base';
import tseslint from 'typescript-eslint';

const communityNodes = n8nCommunityNodesPlugin.configs.recommendedWithoutN8nCloudSupport;

export default tseslint.config(
	globalIgnores(['dist', 'node_modules', 'test', 'bench', 'scripts', 'gulpfile.js', 'eslint.config.mjs']),
	{
		files: ['**/*.ts'],
		extends: [
			js.configs.recommended,
			tseslint.configs.recommended,
			communityNodes,
			importX.configs['flat/recommended'],
		],
		rules: {
			'prefer-spread': 'off',
			'no-console': 'error',
		},
	},
	{
		plugins: { 'n8n-nodes-base': n8nNodesBase },
		settings: { 'import-x/resolver-next': [createTypeScriptImportResolver()] },
	},
	{
		files: ['package.json'],
		extends: [communityNodes],
		rules: {
			...n8nNodesBase.configs.community.rules,
			// The nodes need these at run time, in n8n's process: pg (PostgreSQL, every node but ArangoCAS),
			// arangojs (ArangoCAS), the document parsers of the Knowledge Bot (pdf-parse, mammoth, html-to-text),
			// gpt-tokenizer (chunking), jsonpath-plus, zod (the contracts), ws (Pipeline Push), prom-client
			// (metrics), ipaddr.js (the outbound address guard). n8n Cloud and verified packages allow none, so this
			// package is for self-hosted n8n only, installed as an unverified community package (README).
			'@n8n/community-nodes/no-runtime-dependencies': 'off',
		},
		languageOptions: {
			parser: tseslint.parser,
			parserOptions: { extraFileExtensions: ['.json'] },
		},
	},
	{
		files: ['./credentials/**/*.ts'],
		rules: {
			...n8nNodesBase.configs.credentials.rules,
			'n8n-nodes-base/cred-class-field-documentation-url-miscased': 'off',
			'n8n-nodes-base/cred-class-field-type-options-password-missing': 'off',
			// Every credential sets `documentationUrl = docsUrl('credentials.md#…')` (nodes/shared/docsUrl.ts, the one
			// base URL of the docs links); the rule only recognises a string literal. test/unit/docsLinks.test.ts
			// checks that each credential has a documentationUrl and that it resolves to a heading of docs/.
			'n8n-nodes-base/cred-class-field-documentation-url-missing': 'off',
		},
	},
	{
		files: ['./nodes/**/*.ts'],
		rules: {
			...n8nNodesBase.configs.nodes.rules,
			'n8n-nodes-base/node-class-description-inputs-wrong-regular-node': 'off',
			'n8n-nodes-base/node-class-description-outputs-wrong': 'off',
			'n8n-nodes-base/node-param-type-options-max-value-present': 'off',
		},
	},
	{
		// The modules under a node (actions/, transport/, engine/) and nodes/shared/ have no `this.getNode()`: they
		// throw ContractError (nodes/shared/errors.ts: status code, kind, retryable) or let an error through, and
		// the one per-item loop of every node (nodes/shared/node/runItems.ts, runBatch.ts) turns each into the
		// item's ErrorEnvelope on the error output or a NodeOperationError. The rule stays on in *.node.ts.
		files: ['./nodes/**/*.ts'],
		ignores: ['./nodes/*/*.node.ts'],
		rules: { '@n8n/community-nodes/require-node-api-error': 'off' },
	},
	{
		// These nodes' per-item handlers return `{ json }` to runItems (nodes/shared/node/runItems.ts), which adds
		// `pairedItem: { item: itemIndex }` to every item it outputs (tested by test/unit/runItems.test.ts); the
		// rule sees only the handler's object literal.
		files: [
			'./nodes/ContextLoader/ContextLoader.node.ts',
			'./nodes/ErrorPipe/ErrorPipe.node.ts',
			'./nodes/TelegramIngest/TelegramIngest.node.ts',
		],
		rules: { '@n8n/community-nodes/missing-paired-item': 'off' },
	},
);
