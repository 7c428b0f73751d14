import { z } from 'zod';

const examples = z.array(z.string().min(1).max(5_000)).max(50);

export const CreateVaultSchema = z.object({
  vault_id: z
    .string()
    .regex(/^v_[a-z0-9_]{1,48}$/, 'vault_id is v_ followed by 1–48 lower-case letters, digits or underscores')
    .refine((v) => v !== 'v_unassigned', 'v_unassigned already exists')
    .optional(),
  name: z.string().trim().min(1).max(100),
  description: z.string().max(2_000).default(''),
  examples: examples.default([]),
});

export const UpdateVaultSchema = z
  .object({ name: z.string().trim().min(1).max(100).optional(), description: z.string().max(2_000).optional(), examples: examples.optional() })
  .refine((v) => v.name !== undefined || v.description !== undefined || v.examples !== undefined, 'nothing to change');
