import type { Caller } from '@lore/contracts';

/**
 * Who is asking, as core's application layer needs it: the caller (`callerOf`; its owner owns chat sessions,
 * feedback and uploads, so one user's sessions are not another's, even in the same tenant; an administrator may
 * manage personas and connectors) and the e-mail address.
 */
export interface Principal extends Caller {
  /** A signed-in user's e-mail address, '' for keys and OAuth clients (a credential's `user_email`). */
  email: string;
}
