import { ContradictionListSchema, ContradictionSchema } from './contradictions/schema';
import { DocumentListSchema, DocumentSchema } from './documents/schema';
import { HealthSchema } from './health/schema';
import { errorView } from './route';
import { UploadSchema } from './uploads/schema';
import { VaultListSchema, VaultSchema } from './vaults/schema';

/** The view schemas of the memory routes, each declared in its resource's schema.ts, for clients and tests. */
export const memorySchemas = {
  ErrorSchema: errorView,
  DocumentSchema,
  DocumentListSchema,
  VaultSchema,
  VaultListSchema,
  UploadSchema,
  ContradictionSchema,
  ContradictionListSchema,
  HealthSchema,
};
