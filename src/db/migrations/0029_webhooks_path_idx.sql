-- Deploys look a path up among every workflow's rows, deployed or not (a path stays its workspace's while
-- undeployed: src/webhooks/store.ts, pathHolder).
CREATE INDEX webhooks_path ON webhooks (path);
