import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import CDP from 'chrome-remote-interface';

/**
 * A real headless browser for suites that load a Lore page: Debian's Chromium (installed by `test/infra/up.sh`,
 * path in LORE_TEST_CHROMIUM, else `chromium` on PATH), started with its DevTools endpoint on a random loopback
 * port and a throw-away profile, driven over the Chrome DevTools Protocol with chrome-remote-interface.
 *
 *   const browser = await HeadlessBrowser.start();
 *   const page = await browser.open(url);
 *   await page.waitFor('document.querySelectorAll("tr.row").length > 0', 10_000);
 *   await browser.close();
 */

export interface BrowserPage {
  /** The value of a JavaScript expression in the page (awaited when it is a promise). */
  evaluate<T = unknown>(expression: string): Promise<T>;
  /** Resolves once the expression is truthy in the page; rejects after `timeoutMs` with the last value seen. */
  waitFor(expression: string, timeoutMs: number): Promise<void>;
  /** Console messages and uncaught exceptions the page produced, in order. */
  readonly console: string[];
  /** Every response the page received: URL, status, media type. */
  readonly responses: Array<{ url: string; status: number; mimeType: string }>;
  close(): Promise<void>;
}

export class HeadlessBrowser {
  private constructor(
    private readonly child: ChildProcess,
    private readonly port: number,
    private readonly profile: string,
  ) {}

  static executable(): string {
    return process.env.LORE_TEST_CHROMIUM || 'chromium';
  }

  static async start(timeoutMs = 30_000): Promise<HeadlessBrowser> {
    const profile = mkdtempSync(join(tmpdir(), 'lore-chromium-'));
    const child = spawn(
      HeadlessBrowser.executable(),
      [
        '--headless=new',
        // Tests run as root in a container: Chromium's sandbox needs user namespaces it may not have there.
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-extensions',
        '--disable-background-networking',
        '--remote-debugging-address=127.0.0.1',
        '--remote-debugging-port=0',
        `--user-data-dir=${profile}`,
        'about:blank',
      ],
      // A process group of its own, so closing it ends its helper processes (renderer, zygote, crash handler) too.
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    const port = await new Promise<number>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`chromium did not open its DevTools port within ${timeoutMs} ms: ${seen.slice(-2000)}`)), timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`chromium could not be started (${HeadlessBrowser.executable()}): ${err.message}; run test/infra/up.sh browser`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`chromium exited (${code}) before opening its DevTools port: ${seen.slice(-2000)}`));
      });
      child.stderr!.on('data', (chunk: Buffer) => {
        seen += chunk.toString('utf8');
        const m = /DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(seen);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
    });
    child.stderr!.resume();
    return new HeadlessBrowser(child, port, profile);
  }

  async version(): Promise<string> {
    const v = await CDP.Version({ host: '127.0.0.1', port: this.port });
    return v.Browser;
  }

  /** A new tab with `url` loaded (the load event has fired). */
  async open(url: string, timeoutMs = 15_000): Promise<BrowserPage> {
    const port = this.port;
    const target = await CDP.New({ host: '127.0.0.1', port, url: 'about:blank' });
    const client = await CDP({ host: '127.0.0.1', port, target });
    const consoleLines: string[] = [];
    const responses: Array<{ url: string; status: number; mimeType: string }> = [];
    client.Runtime.consoleAPICalled((e) => consoleLines.push(`${e.type}: ${e.args.map((a) => String(a.value ?? a.description ?? '')).join(' ')}`));
    client.Runtime.exceptionThrown((e) => consoleLines.push(`exception: ${e.exceptionDetails.exception?.description ?? e.exceptionDetails.text}`));
    client.Network.responseReceived((e) => responses.push({ url: e.response.url, status: e.response.status, mimeType: e.response.mimeType }));
    await Promise.all([client.Page.enable(), client.Runtime.enable(), client.Network.enable({})]);
    const loaded = client.Page.loadEventFired();
    await client.Page.navigate({ url });
    await Promise.race([loaded, new Promise((_, reject) => setTimeout(() => reject(new Error(`${url} did not load within ${timeoutMs} ms`)), timeoutMs))]);
    const evaluate = async <T>(expression: string): Promise<T> => {
      const r = await client.Runtime.evaluate({ expression, awaitPromise: true, returnByValue: true });
      if (r.exceptionDetails) throw new Error(`the page threw: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
      return r.result.value as T;
    };
    return {
      evaluate,
      console: consoleLines,
      responses,
      async waitFor(expression, waitMs) {
        const deadline = Date.now() + waitMs;
        let last: unknown;
        for (;;) {
          last = await evaluate(expression);
          if (last) return;
          if (Date.now() > deadline) throw new Error(`the page did not satisfy ${expression} within ${waitMs} ms (last value ${JSON.stringify(last)}; console: ${consoleLines.join(' | ')})`);
          await new Promise((r) => setTimeout(r, 100));
        }
      },
      async close() {
        await client.close();
        await CDP.Close({ host: '127.0.0.1', port, id: target.id }).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    const group = (signal: NodeJS.Signals) => {
      try {
        // The whole group: the browser and every helper it started.
        if (this.child.pid !== undefined) process.kill(-this.child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    if (this.child.exitCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      group('SIGTERM');
      await Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, 5_000))]);
      if (this.child.exitCode === null) {
        group('SIGKILL');
        await Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, 5_000))]);
      }
    }
    // Helpers left of the group are killed outright; one may still be writing into the profile a moment after the
    // browser exits (ENOTEMPTY), so the removal is tried again for a few seconds.
    group('SIGKILL');
    for (let attempt = 0; ; attempt++) {
      try {
        rmSync(this.profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
        return;
      } catch (err) {
        if (attempt >= 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }
}
