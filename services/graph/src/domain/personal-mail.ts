/**
 * Mail providers whose addresses belong to people, not to the companies they work for (free-mail and personal
 * providers, and the mail of consumer internet providers): an address at one of them says nothing about the
 * person's employer, so its domain never names a company in a knowledge graph (docs/memory.md, "Mapping tables and
 * lists to nodes and edges"). The one list of them in Lore; add a provider here.
 *
 * Not taken from an npm list: the ones there are made for sign-up filtering and also hold companies' own domains
 * (`facebook.com`, `alibaba.com`, universities), whose people's addresses do name their employer. This list holds only
 * domains where anyone can open a personal mailbox, so a miss costs a company node named after a provider's domain,
 * while a wrong entry would cost a real company its identity.
 */

/** Providers under one name in many countries: `hotmail.de`, `yahoo.co.uk`, `gmx.net`, `yandex.ru`... */
const PROVIDER_NAMES = new Set(['hotmail', 'outlook', 'live', 'windowslive', 'yahoo', 'ymail', 'aol', 'gmx', 'yandex', 'protonmail', 'tutanota', 'rambler', 'zohomail']);

/** A country or generic suffix after a provider's name: `de`, `com`, `co.uk`, `com.br`, `ne.jp`. */
const SUFFIX = /^[a-z]{2,3}(?:\.[a-z]{2,3})?$/;

/** Providers at exactly these domains. */
const PROVIDER_DOMAINS = new Set([
  // Global
  'gmail.com', 'googlemail.com', 'msn.com', 'passport.com', 'rocketmail.com', 'aim.com', 'icloud.com', 'me.com',
  'mac.com', 'proton.me', 'pm.me', 'protonmail.ch', 'tuta.io', 'tuta.com', 'tutamail.com', 'keemail.me',
  'mail.com', 'email.com', 'usa.com', 'post.com', 'inbox.com', 'hushmail.com', 'fastmail.com', 'fastmail.fm',
  'hey.com', 'duck.com', 'mailfence.com', 'runbox.com', 'disroot.org', 'riseup.net', 'lycos.com', 'excite.com',
  'zoho.eu', 'yopmail.com', 'mailinator.com', 'guerrillamail.com',
  // German-speaking countries
  'web.de', 'freenet.de', 't-online.de', 'arcor.de', 'posteo.de', 'posteo.net', 'mailbox.org', 'mail.de',
  'email.de', 'online.de', 'bluewin.ch', 'gmx.at', 'chello.at', 'aon.at',
  // France, Italy, Spain, Portugal, Benelux
  'orange.fr', 'wanadoo.fr', 'free.fr', 'laposte.net', 'sfr.fr', 'neuf.fr', 'club-internet.fr', 'libero.it',
  'virgilio.it', 'tiscali.it', 'alice.it', 'tin.it', 'email.it', 'terra.es', 'telefonica.net', 'sapo.pt',
  'skynet.be', 'telenet.be', 'ziggo.nl', 'kpnmail.nl', 'planet.nl', 'home.nl', 'hetnet.nl',
  // Northern and eastern Europe
  'seznam.cz', 'centrum.cz', 'email.cz', 'wp.pl', 'o2.pl', 'onet.pl', 'op.pl', 'interia.pl', 'gazeta.pl',
  'abv.bg', 'freemail.hu', 'citromail.hu', 'azet.sk', 'inbox.lv', 'inbox.lt', 'mail.ee',
  'ukr.net', 'i.ua', 'meta.ua', 'online.no', 'suomi24.fi',
  // Russia and neighbours
  'mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'internet.ru', 'ya.ru', 'narod.ru',
  // UK, Ireland
  'btinternet.com', 'btopenworld.com', 'virginmedia.com', 'ntlworld.com', 'blueyonder.co.uk', 'talktalk.net',
  'tiscali.co.uk', 'sky.com', 'eircom.net',
  // North America
  'comcast.net', 'att.net', 'sbcglobal.net', 'bellsouth.net', 'verizon.net', 'cox.net', 'charter.net',
  'earthlink.net', 'optonline.net', 'juno.com', 'netzero.net', 'roadrunner.com', 'rr.com',
  'shaw.ca', 'sympatico.ca', 'videotron.ca', 'telus.net',
  // Latin America
  'uol.com.br', 'bol.com.br', 'terra.com.br', 'ig.com.br', 'prodigy.net.mx',
  // Asia and Oceania
  'qq.com', 'foxmail.com', '163.com', '126.com', 'yeah.net', 'sina.com', 'sina.cn',
  'sohu.com', 'aliyun.com', '139.com', '189.cn', 'wo.cn', 'naver.com', 'hanmail.net', 'daum.net', 'nate.com',
  'docomo.ne.jp', 'ezweb.ne.jp', 'softbank.ne.jp', 'i.softbank.jp', 'nifty.com', 'biglobe.ne.jp',
  'rediffmail.com', 'bigpond.com', 'bigpond.net.au', 'optusnet.com.au', 'iinet.net.au',
  'xtra.co.nz', 'pacific.net.sg', 'singnet.com.sg',
]);

/**
 * Whether a domain (normalised: lower case, no `www.`) is a personal mail provider's, or one of its subdomains'
 * (`mail.yahoo.co.jp`, `vip.163.com`).
 */
export function isPersonalMailDomain(domain: string): boolean {
  const labels = domain.toLowerCase().split('.').filter(Boolean);
  for (let i = 0; i + 1 < labels.length; i++) {
    const rest = labels.slice(i);
    if (PROVIDER_DOMAINS.has(rest.join('.'))) return true;
    if (PROVIDER_NAMES.has(rest[0]!) && SUFFIX.test(rest.slice(1).join('.'))) return true;
  }
  return false;
}
