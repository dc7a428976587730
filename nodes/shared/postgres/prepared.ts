/**
 * Named (server-side prepared) statements for the hot paths of the ops.jobs queue (issue 29 P2): Claim Jobs and
 * Finish Job run the same text thousands of times per minute, and PostgreSQL spent about a third of their
 * server time parsing and planning it. A named statement is parsed once per connection; with
 * `plan_cache_mode = force_generic_plan` (set on every connection of our pools, see preferGenericPlans) its
 * plan is made once too. That setting changes nothing for unnamed statements, which PostgreSQL always plans
 * for their parameters: it applies only to the statements named here, whose generic plans are tested
 * (test/integration/jobStatementsPrepared.test.ts: index scans only, whatever the queue's size).
 *
 * Rules for a statement named here:
 *  - its result columns are listed, never `t.*`: a prepared statement whose row type changes (a migration
 *    adding a column while n8n runs) fails with SQLSTATE 0A000 "cached plan must not change result type";
 *  - its generic plan must not depend on a parameter's value (no `LIMIT $n` feeding a join the planner would
 *    size from it: use `= ANY (ARRAY(…))`);
 *  - behind PgBouncer in transaction mode it needs PgBouncer ≥ 1.21 with `max_prepared_statements` > 0
 *    (docs/scaling-out.md). Claim Jobs needs a session connection anyway (its lease).
 */
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';

/** A statement node-postgres prepares once per connection under `name` (`pool.query({ name, text, values })`). */
export interface NamedStatement {
	readonly name: string;
	readonly text: string;
}

/**
 * The named statement of `text`: `contracts_<label>_<first 12 hex of sha256(text)>`, so two versions of a
 * statement (an upgrade of the package in a running pool, a bench's variant) never share a name — node-postgres
 * refuses one name with two texts on a connection.
 * @param label lower-case letters, digits and `_` (part of the name)
 * @throws Error when the label is not that (a programming error)
 */
export function namedStatement(label: string, text: string): NamedStatement {
	if (!/^[a-z0-9_]{1,40}$/.test(label))
		throw new Error(`statement label ${JSON.stringify(label)} is not [a-z0-9_]{1,40}`);
	const digest = createHash('sha256').update(text).digest('hex').slice(0, 12);
	return { name: `contracts_${label}_${digest}`, text };
}

/** The session setting preferGenericPlans sends: generic plans for named statements (PostgreSQL ≥ 12). */
export const GENERIC_PLAN_SETTING = 'SET plan_cache_mode = force_generic_plan';

const prepared = new WeakSet<Pool>();

/**
 * Makes every new connection of `pool` plan named statements once (GENERIC_PLAN_SETTING, sent as the
 * connection's first query, before any of its users' queries: node-postgres runs a connection's queries in
 * order). Not sent as a startup option: a pooler (PgBouncer) refuses those. A failure of the setting (a server
 * older than 12, a pooler) is ignored: the statements still run, planned per execution. Idempotent per pool.
 */
export function preferGenericPlans(pool: Pool): Pool {
	if (prepared.has(pool)) return pool;
	prepared.add(pool);
	pool.on('connect', (client: PoolClient) => {
		client.query(GENERIC_PLAN_SETTING).catch(() => undefined);
	});
	return pool;
}
