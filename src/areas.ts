import type { AreaPlugin } from './context.js';

/** Route plugins of the product areas, registered after the foundation's. One line per area. */
export const areas: AreaPlugin[] = [];
