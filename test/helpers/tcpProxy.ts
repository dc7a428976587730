/**
 * A TCP forwarder on 127.0.0.1 in front of the test PostgreSQL: `down()` drops every open connection
 * and refuses new ones (the database "stops" for whoever connects through it), `up()` brings it back
 * on the same port.
 */
import net from 'node:net';

export class TcpProxy {
	private server?: net.Server;
	private sockets = new Set<net.Socket>();
	port = 0;

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
			client.pipe(upstream).pipe(client);
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
