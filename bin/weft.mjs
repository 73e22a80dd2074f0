#!/usr/bin/env -S node --no-node-snapshot
// The CLI entry: the compiled program lives in dist/ (built by `npm run build`, run on install).
import '../dist/main.js';
