/** The memory-graph, enterprise and memory tools in embedded mode (`npm start`'s composition, the development key). */
import { useEmbedded } from '../support/embedded';
import { describeRouteTools } from './route-tools';

jest.setTimeout(120_000);

const e = useEmbedded('mcp-route-tools');
describeRouteTools('embedded mode', () => ({ url: e.lore.url, key: e.lore.credentials.api_key, call: e.call }));
