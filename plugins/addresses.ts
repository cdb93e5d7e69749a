import { BlockList, isIP } from 'node:net'

/** Whether an address (IPv4, IPv6, or IPv4 mapped into IPv6) is in a list; false for anything that is not an address. */
export type AddressTest = (address: string | undefined) => boolean

const familyOf = (address: string): 'ipv4' | 'ipv6' | undefined => {
  const family = isIP(address)
  return family === 4 ? 'ipv4' : family === 6 ? 'ipv6' : undefined
}

/**
 * The test of a comma-separated list of addresses and CIDRs (`127.0.0.0/8,::1`), on Node's
 * `BlockList`, which also matches `::ffff:127.0.0.1` (an IPv4 client of a dual-stack socket)
 * against `127.0.0.0/8`. Throws, naming the entry, on one that is neither.
 * @example addressList('127.0.0.0/8,::1')('::ffff:127.0.0.1') // true
 */
export function addressList (setting: string): AddressTest {
  const list = new BlockList()
  for (const entry of setting.split(',').map((part) => part.trim())) {
    const [address = '', bits, extra] = entry.split('/')
    const family = familyOf(address)
    const prefix = bits === undefined ? undefined : /^[0-9]{1,3}$/.test(bits) ? Number(bits) : NaN
    if (family === undefined || extra !== undefined || Number.isNaN(prefix) || (prefix ?? 0) > (family === 'ipv4' ? 32 : 128)) {
      throw new Error(`has an entry that is not an address or CIDR: "${entry}"`)
    }
    if (prefix === undefined) list.addAddress(address, family)
    else list.addSubnet(address, prefix, family)
  }
  return (address) => {
    const family = address === undefined ? undefined : familyOf(address)
    return family !== undefined && list.check(address as string, family)
  }
}
