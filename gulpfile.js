'use strict';
/** Copies node and credential icons (and other non-TypeScript assets) next to the compiled files. */
const { src, dest } = require('gulp');

function buildAssets() {
	return src(['nodes/**/*.{png,svg}', 'credentials/**/*.{png,svg}', 'nodes/**/*.node.json'], {
		base: '.',
		encoding: false,
	}).pipe(dest('dist'));
}

exports['build:assets'] = buildAssets;
