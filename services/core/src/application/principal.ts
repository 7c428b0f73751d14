/** Who is asking, as core's application layer needs it: derived only from the gateway's signed identity. */
export interface Principal {
  tenantId: string;
  /**
   * The owner of chat sessions, feedback and uploads: `<credential kind>:<subject>` (a signed-in user, or an API
   * key, or an OAuth client). One user's sessions are not another's, even in the same tenant.
   */
  owner: string;
  /** A tenant key or an administrator: may manage personas and connectors. */
  admin: boolean;
  /** The workspace and memory the request runs in ('' when the credential's workspace has none). */
  workspaceId: string;
  memoryId: string;
  /** A signed-in user's e-mail address, '' for keys and OAuth clients (a credential's `user_email`). */
  email: string;
}
