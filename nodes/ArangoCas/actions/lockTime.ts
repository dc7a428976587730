/**
 * `locked_until` as ArangoCAS reads it. We write it in ms since epoch (`DATE_NOW() + lease`); the seed
 * (§3.6.1) writes `DATE_ADD(DATE_NOW(), 5, 'minutes')`, an ISO 8601 **string**, and AQL orders every
 * string above every number (FACTS: ArangoDB), so a plain `locked_until > now` would keep such a lock
 * active forever and the §3.8 sweep would never clear it. Every check therefore compares
 * `lockedUntilMs(doc)`: the number as is, an ISO string through `DATE_TIMESTAMP` (ms), anything else
 * (null, missing, an unparsable string) as null — no lock.
 */

/** AQL expression: `doc.locked_until` in ms since epoch, or null. `doc` is an AQL variable name. */
export function lockedUntilMs(doc: string): string {
	const v = `${doc}.locked_until`;
	return `(IS_NUMBER(${v}) ? ${v} : IS_STRING(${v}) ? DATE_TIMESTAMP(${v}) : null)`;
}
