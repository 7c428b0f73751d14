import { isPersonalMailDomain } from './personal-mail';

describe('isPersonalMailDomain', () => {
  it('knows free-mail and personal providers, in every country they serve and their subdomains', () => {
    for (const d of [
      'gmail.com', 'googlemail.com', 'outlook.com', 'outlook.de', 'hotmail.com', 'hotmail.de', 'hotmail.co.uk', 'hotmail.fr', 'live.com', 'live.co.uk',
      'yahoo.com', 'yahoo.de', 'yahoo.co.jp', 'mail.yahoo.com', 'icloud.com', 'me.com', 'aol.com', 'proton.me', 'protonmail.com', 'gmx.de', 'gmx.net',
      'gmx.at', 'web.de', 'mail.ru', 'yandex.ru', 'yandex.com', 'qq.com', 'vip.qq.com', '163.com', 'GMAIL.COM',
    ]) expect([d, isPersonalMailDomain(d)]).toEqual([d, true]);
  });

  it('leaves companies\' own domains, also those that spell a provider\'s name inside them', () => {
    for (const d of ['stripe.com', 'acme.de', 'google.com', 'microsoft.com', 'facebook.com', 'yahooinc.com', 'hotmail-consulting.com', 'outlookcapital.com', 'hotmail.example.org', 'com', '']) {
      expect([d, isPersonalMailDomain(d)]).toEqual([d, false]);
    }
  });
});
