import { randomBytes } from 'node:crypto';
import { BullMqQueue } from '../../src/queue/bullmq.js';
import { InProcessQueue } from '../../src/queue/in-process.js';
import { queueConformance } from './conformance.js';

queueConformance('in-process', (concurrency) => new InProcessQueue(concurrency));

const redis = process.env.TEST_REDIS_URL;
if (redis) {
  queueConformance('BullMQ', (concurrency) => new BullMqQueue(redis, concurrency, `weft-test-${randomBytes(4).toString('hex')}`));
}
