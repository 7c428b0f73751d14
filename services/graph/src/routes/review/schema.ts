import { queryInteger } from '@lore/runtime';
import { z } from 'zod';

export const ReviewQuery = z.object({ limit: queryInteger('limit', { min: 1, max: 200, default: 50 }), cursor: z.string().max(200).optional() });

export const FileIntoVaultBody = z.object({ vault_id: z.string().min(1).max(64) });
