import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { assertCleanStrings } from '@lore/runtime';
import { envelopeSchema, jsonDepth, jsonObject, MAX_JSON_DEPTH, seg, ToolInputError } from './define';

describe('envelopeSchema', () => {
  const envelope = envelopeSchema(z.object({ n: z.number() }));

  it('is {success: true, data} or {success: false, error}, and nothing in between', () => {
    expect(envelope.safeParse({ success: true, data: { n: 1 } }).success).toBe(true);
    expect(envelope.safeParse({ success: false, error: 'HTTP 404: not found' }).success).toBe(true);
    expect(envelopeSchema().safeParse({ success: true, data: null }).success).toBe(true);
    const refused = [
      { success: true },
      { success: true, data: { n: 1 }, error: 'x' },
      { success: false },
      { success: false, error: 'x', data: { n: 1 } },
      { success: true, data: { n: 'one' } },
      { success: 'yes', data: { n: 1 } },
      { success: true, data: { n: 1 }, extra: 1 },
    ];
    for (const value of refused) expect({ value, ok: envelope.safeParse(value).success }).toEqual({ value, ok: false });
  });

  it('is taken by the SDK as an output schema: listed with its two shapes, and checked on every successful call', async () => {
    const server = new McpServer({ name: 'probe', version: '1' }, { capabilities: { tools: {} } });
    const answers: Record<string, unknown> = {
      good: { success: true, data: { n: 1 } },
      // A success without data: only the refinement (the union) refuses it.
      hollow: { success: true },
    };
    for (const name of Object.keys(answers)) {
      server.registerTool(name, { description: name, inputSchema: z.object({}), outputSchema: envelope }, async () => ({
        content: [{ type: 'text', text: JSON.stringify(answers[name]) }],
        structuredContent: answers[name] as Record<string, unknown>,
      }));
    }
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'probe-client', version: '1' });
    await client.connect(clientSide);
    try {
      const { tools } = await client.listTools();
      const listed = tools.find((t) => t.name === 'good')!;
      expect(listed.outputSchema).toMatchObject({
        type: 'object',
        properties: { success: { type: 'boolean' }, error: { type: 'string' } },
        required: ['success'],
        additionalProperties: false,
        oneOf: [
          { properties: { success: { const: true } }, required: ['success', 'data'] },
          { properties: { success: { const: false } }, required: ['success', 'error'] },
        ],
      });
      expect(await client.callTool({ name: 'good', arguments: {} })).toMatchObject({ structuredContent: { success: true, data: { n: 1 } } });
      // The SDK's server refuses the answer (an error result in place of it).
      const hollow = (await client.callTool({ name: 'hollow', arguments: {} })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(hollow.isError).toBe(true);
      expect(hollow.content[0]!.text).toMatch(/Output validation error: Invalid structured content for tool hollow: a success carries data/);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('seg', () => {
  it('keeps an argument inside its path segment, and refuses a dot segment, which would leave it', () => {
    const path = (id: string) => new URL(`http://gateway/company-search/status/${seg(id)}`).pathname;
    expect(path('wf-1')).toBe('/company-search/status/wf-1');
    expect(path('../x')).toBe('/company-search/status/..%2Fx');
    expect(path('a.b')).toBe('/company-search/status/a.b');
    expect(path('...')).toBe('/company-search/status/...');
    // A URL reads these as the route above (GET /company-search/), encoded or not.
    for (const dots of ['.', '..', '%2E', '%2e%2E', '.%2e']) expect(() => seg(dots)).toThrow(ToolInputError);
  });
});

describe('jsonObject', () => {
  const nested = (levels: number) => {
    let v: unknown = 1;
    for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { k: v };
    return v as Record<string, unknown>;
  };

  it('counts nesting without recursion, even far deeper than a stack allows', () => {
    expect(jsonDepth({ a: 1 })).toBe(1);
    expect(jsonDepth({ a: [{ b: 1 }] })).toBe(3);
    expect(jsonDepth(nested(100_000), 10)).toBe(11);
  });

  it('refuses an argument nested deeper than the API accepts, with the reason', () => {
    const schema = jsonObject('a filter');
    expect(schema.safeParse({ x: nested(MAX_JSON_DEPTH - 2) }).success).toBe(true);
    expect(schema.safeParse({ x: nested(MAX_JSON_DEPTH - 1) }).success).toBe(false);
    const deep = schema.safeParse({ x: nested(100_000) });
    expect(deep.success).toBe(false);
    expect(deep.error!.issues[0]!.message).toBe(`nests deeper than ${MAX_JSON_DEPTH - 1} levels (${MAX_JSON_DEPTH} with the request body around it, as the API counts)`);
  });

  it('takes exactly the filters the API takes inside its request body (a filter of 64 levels passed, then the API refused it)', () => {
    const schema = jsonObject('a filter');
    for (let levels = MAX_JSON_DEPTH - 4; levels <= MAX_JSON_DEPTH + 1; levels++) {
      const filter = { x: nested(levels - 1) };
      expect(jsonDepth(filter)).toBe(levels);
      let api = true;
      try {
        // The API's body check, on the body the database searches send ({filter, limit, offset}).
        assertCleanStrings({ filter, limit: 10 });
      } catch {
        api = false;
      }
      expect({ levels, tool: schema.safeParse(filter).success }).toEqual({ levels, tool: api });
    }
  });
});
