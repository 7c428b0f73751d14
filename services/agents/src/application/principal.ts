/** Who is asking, as the agents application layer needs it: derived only from the gateway's signed identity. */
export interface Principal {
  tenantId: string;
  /** `<credential kind>:<subject>`: the owner of the workflows, lists and imports it starts. */
  owner: string;
  /** A tenant key or an administrator. */
  admin: boolean;
  workspaceId: string;
  memoryId: string;
  /** The identity's role and a signed-in user's groups (what the tenant's knowledge shows them). */
  role?: string;
  groups?: number[];
  /** The credential may read its memory (a key scoped to other modules or memories may not): false keeps lists off it. */
  readsMemory?: boolean;
}
