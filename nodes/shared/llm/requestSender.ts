/**
 * The model-call Sender (./generate.ts) over an n8n-style HTTP request function: n8n's
 * `this.helpers.httpRequest` in a node, or n8n-core's `httpRequest` in tests. POST with a JSON body, the
 * attempt's timeout (ms), the full response whatever its status (Generate classifies 4xx/5xx/429 itself);
 * a timeout or a refused connection rejects (Generate reads it as such: nodes/shared/llm/calls.ts).
 */
import type { IDataObject, IHttpRequestOptions } from 'n8n-workflow';
import type { Sender } from './generate';

export function requestSender(request: (options: IHttpRequestOptions) => Promise<unknown>): Sender {
	return async ({ url, body, headers, timeoutMs }) => {
		const res = (await request({
			method: 'POST',
			url,
			body: body as IDataObject,
			headers,
			json: true,
			timeout: timeoutMs,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
		})) as { statusCode: number; body: unknown; headers: Record<string, string> };
		return { status: res.statusCode, body: res.body, headers: res.headers };
	};
}
