/** Who is asking, as the agents application layer needs it: derived only from the gateway's signed identity. */
export interface Principal {
  tenantId: string;
  /** `<credential kind>:<subject>`: the owner of the workflows, lists and imports it starts. */
  owner: string;
  /** A tenant key or an administrator. */
  admin: boolean;
  workspaceId: string;
  memoryId: string;
}
