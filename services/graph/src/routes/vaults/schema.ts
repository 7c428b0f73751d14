import { z } from 'zod';

const examples = z.array(z.string().min(1).max(5_000)).max(50);

export const CreateVaultSchema = z.object({
  vault_id: z
    .string()
    .regex(/^v_[a-z0-9_]{1,48}$/, 'vault_id is v_ followed by 1–48 lower-case letters, digits or underscores')
    .optional(),
  name: z.string().trim().min(1).max(100),
  description: z.string().max(2_000).default(''),
  examples: examples.default([]),
});

export const UpdateVaultSchema = z
  .object({ name: z.string().trim().min(1).max(100).optional(), description: z.string().max(2_000).optional(), examples: examples.optional() })
  .refine((v) => v.name !== undefined || v.description !== undefined || v.examples !== undefined, 'nothing to change');

export const VaultSchema = z.object({
  vault_id: z.string(),
  name: z.string(),
  description: z.string(),
  examples: z.array(z.string()),
  document_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const VaultListSchema = z.object({ vaults: z.array(VaultSchema), count: z.number().int() });

export const VaultDeletedSchema = z.object({ moved_documents: z.number().int().min(0) });

export function presentVault(v: { vault_id: string; name: string; description: string; examples: string[]; document_count: number; created_at: string; updated_at: string }): z.input<typeof VaultSchema> {
  return { vault_id: v.vault_id, name: v.name, description: v.description, examples: v.examples, document_count: v.document_count, created_at: v.created_at, updated_at: v.updated_at };
}
