/**
 * The outbound-request guard of URL → Fetch (nodes/KnowledgeBot/transport/outbound.ts, issue 25 §1) without
 * any real socket: the address classifier on a table of addresses, the allowlist parser, and guardedGet with
 * an injected resolver and a connect spy. The spy never opens a socket: it records the target and throws, so
 * a guard that let a non-public address through fails the test without a packet leaving the machine.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, beforeEach, describe, test } from '@jest/globals';
import fc from 'fast-check';
import {
	addressRange,
	BlockedAddressError,
	DEFAULT_POLICY,
	guardedGet,
	isPublicUnicast,
	OutboundPolicyError,
	parseOutboundPolicy,
	refusal,
	type ConnectTarget,
	type Connector,
	type Resolver,
} from '../../nodes/KnowledgeBot/transport/outbound';
import { hostileString, propertyParams } from '../helpers/property';

/** Address → the range the guard must see (anything but 'unicast' is refused). */
const REFUSED: Array<[string, string]> = [
	['169.254.169.254', 'linkLocal'],
	['169.254.0.1', 'linkLocal'],
	['10.0.0.5', 'private'],
	['10.255.255.255', 'private'],
	['172.16.0.1', 'private'],
	['172.31.255.254', 'private'],
	['192.168.1.1', 'private'],
	['100.64.0.1', 'carrierGradeNat'],
	['100.127.255.254', 'carrierGradeNat'],
	['127.0.0.1', 'loopback'],
	['127.255.255.254', 'loopback'],
	['0.0.0.0', 'unspecified'],
	['0.1.2.3', 'unspecified'],
	['255.255.255.255', 'broadcast'],
	['224.0.0.1', 'multicast'],
	['239.255.255.250', 'multicast'],
	['240.0.0.1', 'reserved'],
	['192.0.2.1', 'reserved'],
	['198.18.0.1', 'reserved'],
	['::', 'unspecified'],
	['::1', 'loopback'],
	['fc00::1', 'uniqueLocal'],
	['fd12:3456:789a::1', 'uniqueLocal'],
	['fe80::1', 'linkLocal'],
	['febf::1', 'linkLocal'],
	['fec0::1', 'deprecatedSiteLocal'],
	['feff::1', 'deprecatedSiteLocal'],
	['ff02::1', 'multicast'],
	['::ffff:127.0.0.1', 'ipv4Mapped'],
	['::ffff:8.8.8.8', 'ipv4Mapped'],
	['::ffff:169.254.169.254', 'ipv4Mapped'],
	['::127.0.0.1', 'ipv4Mapped'],
	['::7f00:1', 'nonGlobalUnicast'],
	['::a00:5', 'nonGlobalUnicast'],
	['64:ff9b::7f00:1', 'rfc6052'],
	['64:ff9b::a9fe:a9fe', 'rfc6052'],
	['64:ff9b:1::1', 'rfc6052'],
	['2002:7f00:1::', '6to4'],
	['2002:a9fe:a9fe::1', '6to4'],
	['2001::1', 'teredo'],
	['2001:db8::1', 'reserved'],
	['100::1', 'discard'],
	['::ffff:0:7f00:1', 'rfc6145'],
];
const PUBLIC = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'];

describe('addressRange', () => {
	test.each(REFUSED)('%s is %s, not public', (address, range) => {
		assert.equal(addressRange(address), range);
		assert.equal(isPublicUnicast(address), false);
		if (net.isIPv6(address)) assert.equal(isPublicUnicast(`[${address}]`), false);
	});
	test.each(PUBLIC)('%s is public unicast', (address) => {
		assert.equal(addressRange(address), 'unicast');
		assert.equal(isPublicUnicast(address), true);
	});
});

describe('parseOutboundPolicy', () => {
	test('empty: 80 and 443, nothing allowlisted', () => {
		const policy = parseOutboundPolicy('', '');
		assert.deepEqual([...policy.ports], [80, 443]);
		assert.deepEqual(policy.hosts, []);
		assert.deepEqual(policy.cidrs, []);
	});
	test('hosts (case, trailing dot, wildcard, IDN), addresses, CIDRs, ports and ranges', () => {
		const policy = parseOutboundPolicy(
			'Intranet.Example.,*.corp.example\n127.0.0.1 [::1] 10.0.0.0/8; fd00::/8 bücher.example',
			'8080, 9000-9002',
		);
		assert.deepEqual(policy.hosts, ['intranet.example', '*.corp.example', 'xn--bcher-kva.example']);
		assert.deepEqual(
			policy.cidrs.map(([ip, bits]) => `${ip.toString()}/${bits}`),
			['127.0.0.1/32', '::1/128', '10.0.0.0/8', 'fd00::/8'],
		);
		assert.deepEqual([...policy.ports], [8080, 9000, 9001, 9002]);
	});
	test.each([
		['10.0.0.0/33', undefined, 'Allowed Private Addresses'],
		['127.1', undefined, 'Allowed Private Addresses'],
		['http://x', undefined, 'Allowed Private Addresses'],
		['a..b', undefined, 'Allowed Private Addresses'],
		['10.1/16', undefined, 'Allowed Private Addresses'],
		['192.168/16', undefined, 'Allowed Private Addresses'],
		['10/8', undefined, 'Allowed Private Addresses'],
		['010.0.0.0/8', undefined, 'Allowed Private Addresses'],
		['0x7f.0.0.1/32', undefined, 'Allowed Private Addresses'],
		['2130706433/32', undefined, 'Allowed Private Addresses'],
		['10.0.0.0/08', undefined, 'Allowed Private Addresses'],
		['::ffff:010.0.0.1/104', undefined, 'Allowed Private Addresses'],
		['::ffff:0x7f.0.0.1', undefined, 'Allowed Private Addresses'],
		['010.0.0.1', undefined, 'Allowed Private Addresses'],
		['fe80::1%eth0', undefined, 'Allowed Private Addresses'],
		['fe80::%eth0/10', undefined, 'Allowed Private Addresses'],
		['fe80::/10%eth0', undefined, 'Allowed Private Addresses'],
		['', '0', 'Allowed Ports'],
		['', '65536', 'Allowed Ports'],
		['', '90-80', 'Allowed Ports'],
		['', 'http', 'Allowed Ports'],
	])('%j / %j: an OutboundPolicyError naming %s', (addresses, ports, option) => {
		assert.throws(
			() => parseOutboundPolicy(addresses, ports),
			(e: unknown) => e instanceof OutboundPolicyError && e.option === option,
		);
	});
});

/** A resolver answering from a table (unknown names: no address), recording each name asked. */
function tableResolver(table: Record<string, string[]>): Resolver & { asked: string[] } {
	const asked: string[] = [];
	const resolve = async (hostname: string) => {
		asked.push(hostname);
		return (table[hostname] ?? []).map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
	};
	return Object.assign(resolve, { asked });
}

/** A connector that opens nothing: it records the target and fails the request. */
function connectSpy(): Connector & { targets: ConnectTarget[] } {
	const targets: ConnectTarget[] = [];
	const connect = (target: ConnectTarget) => {
		targets.push(target);
		throw new Error(`connect spy: no socket (${target.address}:${target.port})`);
	};
	return Object.assign(connect, { targets });
}

/** Fails when anything in this process opens a TCP socket (belt and braces beside the spy). */
let realConnect: typeof net.Socket.prototype.connect;
const opened: unknown[] = [];
beforeEach(() => {
	realConnect = net.Socket.prototype.connect;
	net.Socket.prototype.connect = function (...args: unknown[]) {
		opened.push(args[0]);
		throw new Error('a socket was opened in a test that must open none');
	} as typeof realConnect;
});
afterEach(() => {
	net.Socket.prototype.connect = realConnect;
	assert.deepEqual(opened, [], 'no socket may be opened');
});

async function refused(url: string, resolve: Resolver, connect: Connector, policy = DEFAULT_POLICY) {
	const error = await guardedGet(url, { timeoutMs: 2000, maxBytes: 1000, policy, resolve, connect }).then(
		() => assert.fail(`${url} was fetched`),
		(e: unknown) => e,
	);
	assert.ok(error instanceof BlockedAddressError, `${url}: ${String(error)}`);
	assert.equal(error.code, 'BLOCKED_ADDRESS');
	return error;
}

describe('guardedGet with an injected resolver and a connect spy', () => {
	test.each(REFUSED.map(([address]) => address))('a name resolving to %s is refused, no connect', async (address) => {
		const resolve = tableResolver({ 'inside.example': [address] });
		const connect = connectSpy();
		const error = await refused('http://inside.example/latest/meta-data/', resolve, connect);
		assert.equal(error.reason, 'address');
		assert.deepEqual(resolve.asked, ['inside.example']);
		assert.deepEqual(connect.targets, []);
	});

	test.each(REFUSED.map(([address]) => address))('the IP literal %s is refused without a lookup', async (address) => {
		const resolve = tableResolver({});
		const connect = connectSpy();
		const host = net.isIPv6(address) ? `[${address}]` : address;
		const error = await refused(`http://${host}/`, resolve, connect);
		assert.equal(error.reason, 'address');
		assert.deepEqual(resolve.asked, []);
		assert.deepEqual(connect.targets, []);
	});

	test('every odd spelling of 127.0.0.1 and user info: refused, no lookup, no connect', async () => {
		const spellings = [
			'http://127.1/',
			'http://2130706433/',
			'http://0x7f000001/',
			'http://0177.0.0.1/',
			'http://0x7f.1/',
			'http://127.0.0.1./',
			'http://[::ffff:127.0.0.1]/',
			'http://[::127.0.0.1]/',
			'http://[64:ff9b::7f00:1]/',
			'http://[2002:7f00:1::]/',
			'http://good@127.0.0.1/',
			'http://good.example:pw@127.0.0.1/',
			'http://%31%32%37.0.0.1/',
			'http://0/',
			'http://[::]/',
			'HTTP://169.254.169.254/latest/meta-data/iam/',
			'https://10.0.0.5/admin',
		];
		for (const url of spellings) {
			const resolve = tableResolver({});
			const connect = connectSpy();
			const error = await refused(url, resolve, connect);
			assert.equal(error.reason, 'address', url);
			assert.ok(!error.url.includes('good'), `user info is dropped: ${error.url}`);
			assert.deepEqual(resolve.asked, [], url);
			assert.deepEqual(connect.targets, [], url);
		}
	});

	test('a name with one public and one private address connects only to the public one', async () => {
		const resolve = tableResolver({ 'mixed.example': ['10.0.0.5', '93.184.216.34'] });
		const connect = connectSpy();
		await assert.rejects(
			guardedGet('https://mixed.example./x', { timeoutMs: 2000, maxBytes: 10, resolve, connect }),
			/connect spy/,
		);
		assert.deepEqual(connect.targets, [
			{ address: '93.184.216.34', port: 443, family: 4, tls: true, servername: 'mixed.example' },
		]);
	});

	test('ports: 80/443 only by default; Allowed Ports replaces them', async () => {
		const resolve = tableResolver({ 'public.example': ['93.184.216.34'] });
		for (const url of ['http://public.example:8080/', 'https://public.example:22/', 'http://public.example:443/x']) {
			const connect = connectSpy();
			if (url.endsWith('/x')) {
				// 443 on http is still an allowed port: the connect is reached
				await assert.rejects(guardedGet(url, { timeoutMs: 2000, maxBytes: 10, resolve, connect }), /connect spy/);
				continue;
			}
			const error = await refused(url, resolve, connect);
			assert.equal(error.reason, 'port');
			assert.deepEqual(connect.targets, []);
		}
		const connect = connectSpy();
		const policy = parseOutboundPolicy('', '8080');
		await assert.rejects(
			guardedGet('http://public.example:8080/', { timeoutMs: 2000, maxBytes: 10, resolve, connect, policy }),
			/connect spy/,
		);
		assert.equal((await refused('http://public.example/', resolve, connectSpy(), policy)).reason, 'port');
	});

	test('schemes other than http(s) are refused', async () => {
		for (const url of ['ftp://public.example/', 'file:///etc/passwd', 'gopher://127.0.0.1:25/', 'not a url']) {
			const error = await refused(url, tableResolver({}), connectSpy());
			assert.equal(error.reason, 'scheme');
		}
	});

	test('allowlist: a named host may resolve to a private address; a CIDR permits its addresses only; 0.0.0.0 and multicast never', async () => {
		const resolve = tableResolver({
			'intranet.corp.example': ['10.1.2.3'],
			'wiki.corp.example': ['10.1.2.4'],
			'other.example': ['10.9.9.9'],
			'zero.corp.example': ['0.0.0.0'],
		});
		const policy = parseOutboundPolicy('intranet.corp.example, 192.168.0.0/16, fd00::/8', '');
		const connect = connectSpy();
		await assert.rejects(
			guardedGet('http://INTRANET.corp.example./', { timeoutMs: 2000, maxBytes: 10, resolve, connect, policy }),
			/connect spy/,
		);
		await assert.rejects(
			guardedGet('http://192.168.7.7/', { timeoutMs: 2000, maxBytes: 10, resolve, connect, policy }),
			/connect spy/,
		);
		await assert.rejects(
			guardedGet('http://[fd00::5]/', { timeoutMs: 2000, maxBytes: 10, resolve, connect, policy }),
			/connect spy/,
		);
		assert.deepEqual(
			connect.targets.map((t) => t.address),
			['10.1.2.3', '192.168.7.7', 'fd00::5'],
		);
		for (const url of [
			'http://wiki.corp.example/',
			'http://other.example/',
			'http://10.1.2.3/',
			'http://[fc00::1]/',
			'http://127.0.0.1/',
		]) {
			assert.equal((await refused(url, resolve, connectSpy(), policy)).reason, 'address', url);
		}
		const wildcard = parseOutboundPolicy('*.corp.example, 0.0.0.0/0', '');
		assert.equal((await refused('http://zero.corp.example/', resolve, connectSpy(), wildcard)).range, 'unspecified');
		assert.equal((await refused('http://224.0.0.1/', resolve, connectSpy(), wildcard)).range, 'multicast');
	});

	test('embedded IPv4: unspecified, multicast and broadcast in a mapped or compatible form are never permitted; a v4 CIDR covers the mapped form', async () => {
		const never: Array<[string, string]> = [
			['::ffff:0.0.0.0', 'unspecified'],
			['::ffff:0.1.2.3', 'unspecified'],
			['::ffff:224.0.0.1', 'multicast'],
			['::ffff:255.255.255.255', 'broadcast'],
			['::0.0.0.0', 'unspecified'],
			['::e000:1', 'multicast'],
			['::ffff:ffff:ffff', 'broadcast'],
		];
		const everything = parseOutboundPolicy('::/0, 0.0.0.0/0, *.corp.example', '');
		for (const [address, range] of never) {
			assert.equal(refusal(address, everything, false), range, `${address} under ::/0`);
			assert.equal(refusal(address, everything, true), range, `${address} from an allowlisted name`);
			const resolve = tableResolver({ 'zero.corp.example': [address] });
			const connect = connectSpy();
			assert.equal((await refused('http://zero.corp.example/', resolve, connect, everything)).range, range);
			assert.equal((await refused(`http://[${address}]/`, resolve, connect, everything)).range, range);
			assert.deepEqual(connect.targets, []);
		}
		// an IPv4 CIDR covers the mapped and the compatible form of its addresses, nothing else
		const ten = parseOutboundPolicy('10.0.0.0/8', '');
		assert.equal(refusal('::ffff:10.1.2.3', ten, false), null);
		assert.equal(refusal('::a01:203', ten, false), null);
		assert.equal(refusal('::ffff:11.1.2.3', ten, false), 'ipv4Mapped');
		assert.equal(refusal('::ffff:127.0.0.1', ten, false), 'ipv4Mapped');
		// no allowlist: mapped, compatible, NAT64 and 6to4 forms stay refused, also of public addresses
		for (const address of ['::ffff:8.8.8.8', '::808:808', '::ffff:10.1.2.3', '64:ff9b::808:808', '2002:808:808::'])
			assert.notEqual(refusal(address, DEFAULT_POLICY, false), null, address);
		// ::1 is not an IPv4-compatible form: [::1] on the allowlist still permits it
		assert.equal(refusal('::1', parseOutboundPolicy('[::1]', ''), false), null);
		assert.equal(refusal('::1', everything, false), null);
	});

	test('a name that resolves to nothing is refused as unresolved', async () => {
		const error = await refused('http://nowhere.example/', tableResolver({}), connectSpy());
		assert.equal(error.reason, 'unresolved');
	});
});

/** URL strings: arbitrary text, and URLs built from hosts of every kind, spellings and ports. */
function urlStrings(): fc.Arbitrary<string> {
	const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
	const v4Odd = fc.oneof(
		fc.nat(0xffffffff).map(String),
		fc.nat(0xffffffff).map((n) => `0x${n.toString(16)}`),
		fc.tuple(fc.nat(255), fc.nat(0xffffff)).map(([a, b]) => `${a}.${b}`),
		fc
			.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255))
			.map((o) => o.map((x) => `0${x.toString(8)}`).join('.')),
	);
	const v6 = fc.ipV6().map((a) => `[${a}]`);
	const special = fc.constantFrom(
		'127.0.0.1',
		'[::1]',
		'[::ffff:127.0.0.1]',
		'[::ffff:10.0.0.1]',
		'169.254.169.254',
		'[64:ff9b::a00:1]',
		'[2002:a00:1::]',
		'localhost',
		'metadata.example',
		'public.example',
		'mixed.example',
		'127.0.0.1.',
		'[fe80::1]',
	);
	const host = fc.oneof(v4, v4Odd, v6, special, fc.domain());
	const built = fc
		.tuple(
			fc.constantFrom('http', 'https', 'HTTP', 'ftp', 'file', 'javascript'),
			fc.option(fc.constantFrom('good@', 'user:pass@', 'a@b@', '@'), { nil: '' }),
			host,
			fc.option(fc.constantFrom(':80', ':443', ':8080', ':0', ':65535', ':'), { nil: '' }),
			fc.string({ maxLength: 20 }),
		)
		.map(([scheme, user, h, port, rest]) => `${scheme}://${user}${h}${port}/${rest}`);
	const huge = fc.constantFrom(
		`http://${'a'.repeat(100_000)}.example/`,
		`http://public.example/${'x'.repeat(200_000)}`,
		`http://${'1.'.repeat(5000)}1/`,
		`http://[${'0:'.repeat(7)}1]/\u0000`,
	);
	return fc.oneof(
		built,
		fc.webUrl({ withQueryParameters: true, withFragments: true }),
		hostileString(80),
		fc.tuple(fc.constantFrom('http://', 'https://'), hostileString(40)).map(([a, b]) => a + b),
		huge,
	);
}

test('property: for arbitrary URL strings the guard refuses or connects only to a public unicast address on 80/443', async () => {
	// what names resolve to: private, loopback, mixed and public answers; any other name resolves to a public or private address by its length
	const named: Record<string, string[]> = {
		localhost: ['127.0.0.1', '::1'],
		'metadata.example': ['169.254.169.254'],
		'public.example': ['93.184.216.34'],
		'mixed.example': ['10.0.0.1', '2606:4700::1111', '127.0.0.1'],
	};
	const pool = ['10.0.0.1', '8.8.8.8', '::1', '2001:4860::8888', '100.64.1.1', 'fd00::1', '1.1.1.1', '0.0.0.0'];
	const resolve: Resolver = async (hostname) =>
		(Object.hasOwn(named, hostname) ? named[hostname] : [pool[hostname.length % pool.length]]).map((address) => ({
			address,
			family: net.isIPv6(address) ? 6 : 4,
		}));
	const seen = { refused: 0, connected: 0 };
	await fc.assert(
		fc.asyncProperty(urlStrings(), async (url) => {
			const targets: ConnectTarget[] = [];
			const connect: Connector = (target) => {
				targets.push(target);
				throw new Error('connect spy');
			};
			let error: unknown = null;
			try {
				await guardedGet(url, { timeoutMs: 2000, maxBytes: 100, resolve, connect });
			} catch (e) {
				error = e;
			}
			assert.ok(error, 'nothing is ever fetched here');
			if (targets.length === 0) {
				assert.ok(error instanceof BlockedAddressError, `${JSON.stringify(url)}: ${String(error)}`);
				seen.refused++;
				return;
			}
			seen.connected++;
			assert.equal(targets.length, 1);
			assert.ok(isPublicUnicast(targets[0].address), `${JSON.stringify(url)} → ${targets[0].address}`);
			assert.ok([80, 443].includes(targets[0].port));
			assert.ok(net.isIP(targets[0].address), 'the socket goes to an IP literal');
		}),
		propertyParams('outbound guard: refuse or connect to public unicast'),
	);
	// both outcomes occur (the generator reaches the connect step, and refusals)
	assert.ok(seen.refused > 0 && seen.connected > 0, JSON.stringify(seen));
});

test('property: the allowlist options take any text: a policy whose ports are 1–65535 and whose entries are valid, or an OutboundPolicyError naming the option', () => {
	const entry = fc.oneof(
		hostileString(24),
		fc.ipV4(),
		fc.ipV6(),
		fc.domain(),
		fc.tuple(fc.ipV4(), fc.integer({ min: -1, max: 40 })).map(([ip, bits]) => `${ip}/${bits}`),
		fc.tuple(fc.ipV6(), fc.integer({ min: -1, max: 130 })).map(([ip, bits]) => `${ip}/${bits}`),
		fc.tuple(fc.ipV4Extended(), fc.nat(33)).map(([ip, bits]) => `${ip}/${bits}`),
		fc.tuple(fc.ipV6(), fc.constantFrom('%eth0', '%1', '%')).map(([ip, zone]) => ip + zone),
		fc
			.tuple(fc.nat(255), fc.option(fc.nat(255), { nil: undefined }), fc.nat(32))
			.map(([a, b, bits]) => `${a}${b === undefined ? '' : `.${b}`}/${bits}`),
		fc.integer({ min: -5, max: 70_000 }).map(String),
		fc.tuple(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 70_000 })).map(([a, b]) => `${a}-${b}`),
	);
	const list = fc.array(entry, { maxLength: 6 }).map((parts) => parts.join(', '));
	fc.assert(
		fc.property(list, list, (addresses, ports) => {
			let policy;
			try {
				policy = parseOutboundPolicy(addresses, ports);
			} catch (error) {
				assert.ok(error instanceof OutboundPolicyError, String(error));
				assert.ok(['Allowed Private Addresses', 'Allowed Ports'].includes(error.option));
				return;
			}
			assert.ok(policy.ports.size > 0);
			for (const p of policy.ports) assert.ok(Number.isInteger(p) && p >= 1 && p <= 65535, String(p));
			for (const h of policy.hosts) assert.match(h, /^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*$/);
			for (const [, bits] of policy.cidrs) assert.ok(bits >= 0 && bits <= 128);
			// every address or CIDR entry kept is spelled plainly: four decimal IPv4 parts, no zone id
			const kept = addresses
				.split(/[\s,;]+/)
				.filter((e) => e && (e.includes('/') || net.isIP(e.replace(/^\[|\]$/g, ''))));
			for (const entry of kept) {
				assert.ok(!entry.includes('%'), `zone id kept: ${entry}`);
				const address = entry.replace(/^\[|\]$/g, '').split('/')[0];
				const tail = /(?:^|:)([^:]*\.[^:]*)$/.exec(address)?.[1];
				if (tail) assert.match(tail, /^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$/, `loose IPv4 kept: ${entry}`);
			}
			assert.equal(policy.cidrs.length, kept.length);
		}),
		propertyParams('outbound policy: parsed or refused by name'),
	);
});
