import type Router from '@koa/router';
import type { RouterContext } from '@koa/router';
import type { LoreState } from '@lore/runtime';
import type { Principal } from '../auth/authenticate';
import type { User } from '../store/users';

/** Per-request state of the public app: the runtime's request id and logger plus who is calling. */
export interface GatewayRequestState extends LoreState {
  principal?: Principal;
  user?: User;
}

export type GatewayKoaContext = RouterContext<GatewayRequestState>;
export type GatewayRouter = Router<GatewayRequestState>;
