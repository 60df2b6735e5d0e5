import type { NetworkInterfaceInfo } from 'node:os';

/** 0.0.0.0 and :: listen on every interface of the machine: no one can open them as an address. */
export function isUnspecified(listen: string): boolean {
  const bare = listen.replace(/^\[|\]$/g, '');
  return bare === '0.0.0.0' || bare === '::' || bare === '0:0:0:0:0:0:0:0';
}

/**
 * The base URLs a colleague can open for a viewer listening on every interface: this machine's
 * non-loopback addresses (IPv4 first; IPv6 too when listening on ::, link-local ones last), or its
 * host name when it has none. For any other listen address, none: the address listened on is the one to open.
 */
export function reachableBases(
  listen: string,
  port: number,
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>,
  hostname: string,
): string[] {
  const url = (host: string): string => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (!isUnspecified(listen)) return [];
  const v6 = listen.includes(':');
  const all = Object.values(interfaces).flatMap((list) => list ?? []).filter((i) => !i.internal);
  const v4s = all.filter((i) => i.family === 'IPv4').map((i) => i.address);
  const v6s = v6 ? all.filter((i) => i.family === 'IPv6' && !i.address.startsWith('fe80')).map((i) => i.address) : [];
  const found = [...new Set([...v4s, ...v6s])];
  return found.length > 0 ? found.map(url) : [url(hostname)];
}
