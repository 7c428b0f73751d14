import { z } from 'zod';
import type { UploadView } from '../../application/uploads';

export const UploadSchema = z.object({
  upload_id: z.string(),
  status: z.enum(['pending', 'extracting', 'indexing', 'completed', 'failed']),
  filename: z.string(),
  size_bytes: z.number().int(),
  doc_id: z.string().nullable(),
  extractor: z.string().nullable(),
  ocr: z.boolean(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The multipart body, for the document: one file part named `file` (other parts are ignored). */
export const UPLOAD_BODY = {
  'multipart/form-data': {
    schema: { type: 'object', properties: { file: { type: 'string', format: 'binary', description: 'the file; its type comes from its bytes, then its name, then the declared type' } }, required: ['file'] },
  },
};

/** The application's upload view is already the answer (`uploadView`); typed here against the schema, so a drift fails the build. */
export function presentUpload(u: UploadView): z.input<typeof UploadSchema> {
  return u;
}
