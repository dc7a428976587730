/**
 * The demo's local stand-ins (no network needed): the web server of the linked pages, the Telegram Bot API
 * (files and sendMessage), the embeddings API (hashed words) and the model (the extractive answer for WF51's
 * questions, maasModel.ts's normalModel for the MaaS steps). Each is stopped by the demo's cleanup.
 */
import { startBotApi } from '../../test/helpers/botApiStandIn';
import { demoModel } from '../../test/helpers/demoModel';
import { startEmbeddings } from '../../test/helpers/embeddingStandIn';
import { ModelStandIn } from '../../test/helpers/modelStandIn';
import { startPageServer } from '../../test/helpers/pageServer';
import { BOT_TOKEN } from './settings';
import { cleanup } from './state';

/** Starts the four stand-ins (each registered with the cleanup as it starts) and returns them. */
export async function startStandIns() {
	const pages = await startPageServer();
	cleanup.add('stop the page server', () => pages.close());
	const botApi = await startBotApi(BOT_TOKEN);
	cleanup.add('stop the Bot API stand-in', () => botApi.close());
	const embeddings = await startEmbeddings();
	cleanup.add('stop the embeddings stand-in', () => embeddings.close());
	const model = new ModelStandIn();
	// WF51's questions get the extractive answer, the MaaS steps (M11–M14) maasModel.ts's normalModel
	model.respond = demoModel;
	await model.up();
	cleanup.add('stop the model stand-in', () => model.down());
	return { pages, botApi, embeddings, model };
}
