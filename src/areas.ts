import type { AreaPlugin } from './context.js';
import { limitsArea } from './limits/area.js';
import { runsArea } from './runs/area.js';
import { aiRoutes } from './ai/routes.js';
import { tableRoutes } from './tables/routes.js';

/** Route plugins of the product areas, registered after the foundation's. One line per area. */
export const areas: AreaPlugin[] = [
  limitsArea,
  runsArea,
  aiRoutes,
  tableRoutes,
];
