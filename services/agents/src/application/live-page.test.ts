import { LiveTokens, liveFrame, livePagePath } from './live-page';
import { escapeHtml, livePageCsp, livePageHtml } from '../domain/live-page-html';
import type { SessionMessage } from './sessions/messages';

const THREAD = '0b8f3c52-6a43-4c1e-9b7e-2f4d5a6b7c8d';
const OTHER = '1c9f4d63-7b54-4d2f-8c8f-3a5e6b7c8d9e';

describe('LiveTokens', () => {
  const tokens = new LiveTokens('a shared identity secret of at least thirty-two chars', 60);
  const now = Date.UTC(2026, 10, 25, 12, 0, 0);

  it('opens the thread it was issued for, for its tenant, until it expires', () => {
    const t = tokens.issue('tenant-a', THREAD, now);
    expect(t).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(tokens.verify(t, THREAD, now + 59_000)).toEqual({ tenantId: 'tenant-a', expiresAt: now + 60_000 });
    expect(tokens.verify(t, THREAD.toUpperCase(), now)).not.toBeNull();
    expect(tokens.verify(t, THREAD, now + 60_000)).toBeNull();
    expect(tokens.verify(t, OTHER, now)).toBeNull();
  });

  it('refuses a forged, altered or foreign token', () => {
    const t = tokens.issue('tenant-a', THREAD, now);
    const [v, payload, mac] = t.split('.');
    const altered = Buffer.from(JSON.stringify({ t: 'tenant-b', h: THREAD, e: Math.floor(now / 1000) + 60 })).toString('base64url');
    expect(tokens.verify(`${v}.${altered}.${mac}`, THREAD, now)).toBeNull();
    expect(tokens.verify(`${v}.${payload}.${mac!.slice(0, -1)}${mac!.endsWith('A') ? 'B' : 'A'}`, THREAD, now)).toBeNull();
    expect(new LiveTokens('another secret entirely, also long enough!!').verify(t, THREAD, now)).toBeNull();
    for (const bad of [undefined, '', 'v1..', 'v2.x.y', `${t}x`]) expect(tokens.verify(bad, THREAD, now)).toBeNull();
  });

  it('puts the token in the page path, encoded', () => {
    expect(livePagePath(THREAD, 'v1.a.b')).toBe(`/service-deep-search/live/${THREAD}?token=v1.a.b`);
  });
});

describe('the live page and its frames', () => {
  it('escapes what the session said and carries the nonce on its only script and style', () => {
    const html = livePageHtml({ threadId: THREAD, prompt: '<img src=x onerror=alert(1)> & "q"', status: 'ready', nonce: 'abc123==' });
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;');
    expect(html).not.toContain('<img');
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script nonce="abc123==">');
    expect(html).toContain('<style nonce="abc123==">');
    expect(livePageCsp('abc123==')).toBe("default-src 'none'; script-src 'nonce-abc123=='; style-src 'nonce-abc123=='; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    expect(escapeHtml(`'`)).toBe('&#39;');
  });

  it('frames a message as a server-sent event with its cursor as the id', () => {
    // Messages as the sockets send them (their full shape is the sessions' own: messages.ts).
    const progress = { type: 'progress', cursor: 7, thread_id: THREAD, stage: 'visited', message: 'read x' } as unknown as SessionMessage;
    expect(liveFrame(progress)).toBe(`id: 7\nevent: progress\ndata: ${JSON.stringify(progress)}\n\n`);
    const own = { type: 'error', cursor: null, thread_id: THREAD, message: 'x' } as unknown as SessionMessage;
    expect(liveFrame(own)).toMatch(/^event: error\ndata: /);
  });
});
