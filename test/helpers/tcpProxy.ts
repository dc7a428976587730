/**
 * A TCP forwarder on 127.0.0.1 in front of the test PostgreSQL: `down()` drops every open connection
 * and refuses new ones (the database "stops" for whoever connects through it), `up()` brings it back
 * on the same port. `dropReplyTo(marker)`: the next request whose bytes contain `marker` is forwarded, and
 * its connection is cut as soon as the server starts to answer (the answer never reaches the client) —
 * "the statement ran, the reply was lost"; `dropRequestTo(marker)`: that request never reaches the server and
 * its connection is cut — "the connection was lost, the statement never ran". Both look alike to the client.
 */
import net from 'node:net';
import { Transform } from 'node:stream';

export class TcpProxy {
	private server?: net.Server;
	private sockets = new Set<net.Socket>();
	port = 0;
	private dropMarker?: Buffer;
	/** Requests (or their replies) dropped so far. */
	dropped = 0;

	private dropRequestMarker?: Buffer;

	/** Forwards the next request that contains `marker` and drops its reply (both sockets are destroyed). */
	dropReplyTo(marker: string): void {
		this.dropMarker = Buffer.from(marker, 'utf8');
	}

	private dropRequestsLeft = 0;

	/** Drops the next `times` requests that contain `marker` (never forwarded) and cuts their connections. */
	dropRequestTo(marker: string, times = 1): void {
		this.dropRequestMarker = Buffer.from(marker, 'utf8');
		this.dropRequestsLeft = times;
	}

	constructor(
		private readonly targetHost: string,
		private readonly targetPort: number,
	) {}

	async up(): Promise<number> {
		this.server = net.createServer((client) => {
			const upstream = net.connect(this.targetPort, this.targetHost);
			for (const s of [client, upstream]) {
				this.sockets.add(s);
				s.on('close', () => this.sockets.delete(s));
				s.on('error', () => {
					client.destroy();
					upstream.destroy();
				});
			}
			let dropReply = false;
			const cut = (done: () => void) => {
				this.dropped++;
				client.destroy();
				upstream.destroy();
				done();
			};
			const toServer = new Transform({
				transform: (chunk: Buffer, _encoding, done) => {
					if (this.dropRequestMarker && chunk.includes(this.dropRequestMarker)) {
						if (--this.dropRequestsLeft <= 0) this.dropRequestMarker = undefined;
						return cut(done);
					}
					if (this.dropMarker && chunk.includes(this.dropMarker)) {
						this.dropMarker = undefined;
						dropReply = true;
					}
					done(null, chunk);
				},
			});
			const toClient = new Transform({
				transform: (chunk, _encoding, done) => (dropReply ? cut(done) : done(null, chunk)),
			});
			client.pipe(toServer).pipe(upstream);
			upstream.pipe(toClient).pipe(client);
		});
		await new Promise<void>((resolve, reject) => {
			this.server!.once('error', reject);
			this.server!.listen(this.port, '127.0.0.1', () => resolve());
		});
		this.port = (this.server.address() as net.AddressInfo).port;
		return this.port;
	}

	async down(): Promise<void> {
		for (const s of this.sockets) s.destroy();
		this.sockets.clear();
		await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
		this.server = undefined;
	}
}
