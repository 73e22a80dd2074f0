// A trigger's `allowedIps`: the addresses and CIDR ranges a delivery may come from, read by node:net's
// BlockList (IPv4-mapped IPv6 addresses match their IPv4 entries and the other way round). The client's
// address is the route's: the socket's, or X-Forwarded-For's only when the server trusts a proxy
// (WEFT_TRUST_PROXY). The entries were checked on save (src/engine/blocks/webhook.ts, zod's IP and CIDR formats).
import { BlockList, isIP } from 'node:net';

/** Lists built, by their entries: a delivery does not rebuild its trigger's list. */
const built = new Map<string, BlockList>();
const MAX_BUILT = 1000;

function listOf(entries: readonly string[]): BlockList {
  const key = entries.join('\n');
  let list = built.get(key);
  if (!list) {
    list = new BlockList();
    for (const entry of entries) {
      const slash = entry.indexOf('/');
      const address = slash < 0 ? entry : entry.slice(0, slash);
      const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (slash < 0) list.addAddress(address, type);
      else list.addSubnet(address, Number(entry.slice(slash + 1)), type);
    }
    if (built.size >= MAX_BUILT) built.clear();
    built.set(key, list);
  }
  return list;
}

/**
 * Whether a delivery from `ip` may pass: always with no list (or an empty one); otherwise only from a listed
 * address or range. No address, or a list that cannot be read, refuses (never open).
 */
export function ipAllowed(entries: readonly string[] | undefined, ip: string | undefined): boolean {
  if (!entries || entries.length === 0) return true;
  const family = ip ? isIP(ip) : 0;
  if (!ip || family === 0) return false;
  try {
    return listOf(entries).check(ip, family === 6 ? 'ipv6' : 'ipv4');
  } catch {
    return false;
  }
}
