import { readyBanner, type BannerInput } from './banner';

const input = (over: Partial<BannerInput> = {}): BannerInput => ({
  url: 'http://127.0.0.1:8080',
  adminUrl: 'http://127.0.0.1:9081',
  credentialsFile: '/home/dev/lore/.lore/dev-credentials.json',
  credentials: { tenant_id: 'dev', api_key: 'ck_test_secretkey', admin_email: 'admin@lore.localhost', admin_password: 'secret-password', admin_token: 'secret-admin-token' },
  fresh: [],
  embedder: 'hashed hashed-384',
  ...over,
});

describe('the start banner', () => {
  it('shows each secret on the start that made it', () => {
    const text = readyBanner(input({ fresh: ['api_key', 'admin_password', 'admin_token'] }));
    expect(text).toContain('Lore is ready on http://127.0.0.1:8080');
    expect(text).toContain('ck_test_secretkey');
    expect(text).toContain('admin@lore.localhost, password secret-password');
    expect(text).toContain('http://127.0.0.1:9081 (this machine only), token secret-admin-token');
  });

  it('shows only what is new, and otherwise says where the secret is', () => {
    const text = readyBanner(input({ fresh: ['admin_password'] }));
    expect(text).toContain('secret-password');
    expect(text).not.toContain('ck_test_secretkey');
    expect(text).not.toContain('secret-admin-token');
    expect(text).toContain('api key:    in /home/dev/lore/.lore/dev-credentials.json');
    // The suggested command reads the key from the file instead of printing it.
    expect(text).toContain(`curl -H "x-api-key: $(node -p 'require("/home/dev/lore/.lore/dev-credentials.json").api_key')" http://127.0.0.1:8080/api/v1/pages/ping`);
  });

  it('says when the admin API is off', () => {
    const text = readyBanner(input({ adminUrl: null, fresh: ['admin_token'] }));
    expect(text).toContain('admin API:  off');
    expect(text).not.toContain('secret-admin-token');
  });
});
