import type { NetworkInterfaceInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { reachableBases } from '../../src/serve/addresses.js';

const nic = (address: string, family: 'IPv4' | 'IPv6', internal = false): NetworkInterfaceInfo =>
  ({ address, family, internal, netmask: '', mac: '00:00:00:00:00:00', cidr: null, ...(family === 'IPv6' ? { scopeid: 0 } : {}) }) as NetworkInterfaceInfo;

const machine = {
  lo: [nic('127.0.0.1', 'IPv4', true), nic('::1', 'IPv6', true)],
  eth0: [nic('10.1.2.3', 'IPv4'), nic('fe80::1', 'IPv6'), nic('fd00::7', 'IPv6')],
  wlan0: [nic('192.168.1.20', 'IPv4')],
};

describe('the address serve prints when it listens on every interface', () => {
  it('gives the non-loopback IPv4 addresses for 0.0.0.0, never 0.0.0.0 itself', () => {
    expect(reachableBases('0.0.0.0', 8421, machine, 'ws-7')).toEqual(['http://10.1.2.3:8421', 'http://192.168.1.20:8421']);
  });

  it('adds routable IPv6 addresses for ::, in brackets, leaving out link-local ones', () => {
    expect(reachableBases('[::]', 8421, machine, 'ws-7')).toEqual(['http://10.1.2.3:8421', 'http://192.168.1.20:8421', 'http://[fd00::7]:8421']);
  });

  it('falls back to the host name on a machine with only loopback', () => {
    expect(reachableBases('0.0.0.0', 8421, { lo: machine.lo }, 'ws-7')).toEqual(['http://ws-7:8421']);
  });

  it('leaves a named address alone', () => {
    expect(reachableBases('10.1.2.3', 8421, machine, 'ws-7')).toEqual([]);
  });
});
