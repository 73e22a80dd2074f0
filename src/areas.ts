import type { AreaPlugin } from './context.js';
import { runsArea } from './runs/area.js';

/** Route plugins of the product areas, registered after the foundation's. One line per area. */
export const areas: AreaPlugin[] = [
  runsArea,
];
